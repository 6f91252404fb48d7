/**
 * A runner's files as Poseidon handles them (internal/runner/nomad_runner.go, pkg/nullio/ls2json.go):
 * written by streaming a tar archive into `tar --extract` (files 0744, directories 01777, owned by
 * the privileged user), deleted with `rm`, listed by parsing `ls -l --time-style=+%s`, read raw
 * after the same `ls` line that gives their size.
 */
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { shellQuote } from '../exec/shellQuote.js';

/** A file to write: a path ending in `/` is a directory. */
export interface FileToWrite {
  path: string;
  content?: Buffer | string;
}

export interface UpdateFilesRequest {
  /** Paths removed first (recursively); `./*` empties the working directory. */
  delete?: readonly string[];
  copy?: readonly FileToWrite[];
}

/** One entry of a listing, Poseidon's FileHeader. */
export interface FileHeader {
  name: string;
  /** `-` file, `d` directory, `l` link, and the other types `ls` knows. */
  entryType: string;
  linkTarget?: string;
  size: number;
  /** Unix seconds. */
  modificationTime: number;
  /** `rwxr-xr-x`, with `+` when an ACL is set. */
  permissions: string;
  owner: string;
  group: string;
}

const LS = 'ls -l --time-style=+%s -1 --literal';

/** Poseidon's path normalisation (Go's path.Clean), keeping a trailing `/` for directories. */
export function cleanPath(path: string): string {
  const absolute = path.startsWith('/');
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..' && parts.length > 0 && parts[parts.length - 1] !== '..') parts.pop();
    else if (part !== '..' || !absolute) parts.push(part);
  }
  const cleaned = (absolute ? '/' : '') + parts.join('/');
  return cleaned === '' ? (absolute ? '/' : '.') : cleaned;
}

export function listCommand(path: string, recursive: boolean): string {
  return `${LS}${recursive ? ' --recursive' : ''} ${shellQuote(path)}`;
}

/** The `ls` line of the file (its size), then its bytes. */
export function readCommand(path: string): string {
  return `${LS} ${shellQuote(path)} && cat ${shellQuote(path)}`;
}

/** Whether a path stays within the working directory: relative, and not climbing out of it with `..`. */
export function withinWorkingDirectory(path: string): boolean {
  const cleaned = cleanPath(path);
  return !cleaned.startsWith('/') && cleaned !== '..' && !cleaned.startsWith('../');
}

/** The request's paths within the working directory and beyond it (each part undefined when it has none), in their order. */
export function splitByReach(request: UpdateFilesRequest): { within: UpdateFilesRequest | undefined; beyond: UpdateFilesRequest | undefined } {
  const part = (inside: boolean): UpdateFilesRequest | undefined => {
    const deletions = (request.delete ?? []).filter((path) => (path === './*' || withinWorkingDirectory(path)) === inside);
    const copies = (request.copy ?? []).filter((file) => withinWorkingDirectory(file.path) === inside);
    return deletions.length === 0 && copies.length === 0 ? undefined : { delete: deletions, copy: copies };
  };
  const within = part(true);
  const beyond = part(false);
  // An empty request still runs once (as root, in the working directory), as Poseidon's does.
  return within === undefined && beyond === undefined ? { within: request, beyond: undefined } : { within, beyond };
}

/** Deletions, then the archive on stdin extracted as given (absolute paths stay absolute). */
export function updateCommand(request: UpdateFilesRequest): string {
  const deletions = (request.delete ?? []).map((path) => (path === './*' ? './*' : shellQuote(cleanPath(path))));
  const remove = deletions.length > 0 ? `rm --recursive --force -- ${deletions.join(' ')}; ` : '';
  return `${remove}tar --extract --absolute-names --file=-`;
}

// ---------------------------------------------------------------------------------------------
// A tar archive (POSIX ustar, PAX headers for long names), made as it is read.

const BLOCK = 512;

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function header(name: string, type: '0' | '5' | 'x', size: number, mode: number, mtime: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(name.slice(0, 100), 0, 'utf8');
  block.write(octal(mode, 8), 100);
  block.write(octal(0, 8), 108);
  block.write(octal(0, 8), 116);
  block.write(octal(size, 12), 124);
  block.write(octal(mtime, 12), 136);
  block.write('        ', 148);
  block.write(type, 156);
  block.write('ustar\0', 257);
  block.write('00', 263);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return block;
}

function padding(size: number): Buffer {
  return Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);
}

/** A PAX record `<length> path=<name>\n`, the length counting itself. */
function paxPath(name: string): Buffer {
  const body = ` path=${name}\n`;
  let length = Buffer.byteLength(body) + 1;
  while (String(length).length + Buffer.byteLength(body) !== length) length += 1;
  return Buffer.from(`${length}${body}`);
}

function* entries(files: readonly FileToWrite[], mtime: number): Generator<Buffer> {
  for (const file of files) {
    const directory = file.path.endsWith('/');
    const name = cleanPath(file.path) + (directory ? '/' : '');
    const content = directory ? Buffer.alloc(0) : Buffer.from(file.content ?? '');
    if (Buffer.byteLength(name) > 100) {
      const pax = paxPath(name);
      yield Buffer.concat([header('PaxHeader', 'x', pax.length, 0o644, mtime), pax, padding(pax.length)]);
    }
    // Poseidon's modes: a sticky, world-writable directory lets users create files beside protected ones.
    yield header(name, directory ? '5' : '0', content.length, directory ? 0o1777 : 0o744, mtime);
    if (content.length > 0) {
      yield content;
      yield padding(content.length);
    }
  }
  yield Buffer.alloc(2 * BLOCK);
}

/** The files as a tar archive, one entry at a time (`mtime` in Unix seconds). */
export function tarArchive(files: readonly FileToWrite[], mtime: number): Readable {
  return Readable.from(entries(files, mtime), { objectMode: false });
}

// ---------------------------------------------------------------------------------------------
// `ls -l` output

const PATH_LINE = /^(.*):$/;
const HEADER_LINE = /^([-aAbcCdDlMnpPsw?])([-rwxXsStT]{9})(\+?) +\d+ +(.+?) +(.+?) +(\d+) +(\d+) +(.*)$/;

/** One `ls -l --time-style=+%s` line under `directory` (`dir/` for a recursive listing's sections). */
export function parseLsLine(line: string, directory: string): FileHeader | undefined {
  const match = HEADER_LINE.exec(line);
  if (match === null) return undefined;
  const [, entryType = '-', permissions = '', acl, owner = '', group = '', size = '0', time = '0', rest = ''] = match;
  let name = directory + rest;
  let linkTarget: string | undefined;
  if (entryType === 'l') {
    const arrow = name.indexOf(' -> ');
    if (arrow >= 0) {
      linkTarget = name.slice(arrow + 4);
      name = name.slice(0, arrow);
    }
  }
  return {
    name,
    entryType,
    ...(linkTarget === undefined ? {} : { linkTarget }),
    size: Number(size),
    modificationTime: Number(time),
    permissions: permissions + (acl === '+' ? '+' : ''),
    owner,
    group,
  };
}

/** A whole listing: `total` lines skipped, `dir:` lines naming the section of a recursive one. */
export function parseListing(text: string): FileHeader[] {
  const files: FileHeader[] = [];
  let directory = '';
  for (const line of text.split('\n')) {
    const section = PATH_LINE.exec(line);
    if (section !== null) {
      directory = `${(section[1] ?? '').replace(/\/$/, '')}/`;
      continue;
    }
    const file = parseLsLine(line, directory);
    if (file !== undefined) files.push(file);
  }
  return files;
}

/**
 * Splits the output of readCommand: resolves `header` with the `ls` line, then passes the
 * file's bytes through. The header rejects when the output ends without one.
 */
export class FileContentStream extends Transform {
  readonly header: Promise<FileHeader>;
  private resolveHeader: (header: FileHeader) => void = () => undefined;
  private rejectHeader: (error: Error) => void = () => undefined;
  private pending: Buffer | undefined = Buffer.alloc(0);

  constructor() {
    super();
    this.header = new Promise<FileHeader>((resolve, reject) => {
      this.resolveHeader = resolve;
      this.rejectHeader = reject;
    });
    this.header.catch(() => undefined);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.pending === undefined) return done(null, chunk);
    const buffered = Buffer.concat([this.pending, chunk]);
    const newline = buffered.indexOf(0x0a);
    if (newline < 0) {
      this.pending = buffered;
      return done();
    }
    this.pending = undefined;
    const header = parseLsLine(buffered.subarray(0, newline).toString('utf8'), '');
    if (header === undefined) this.rejectHeader(new Error('the file listing line could not be read'));
    else this.resolveHeader(header);
    done(null, buffered.subarray(newline + 1));
  }

  override _flush(done: TransformCallback): void {
    if (this.pending !== undefined) this.rejectHeader(new Error('no such file'));
    done();
  }
}
