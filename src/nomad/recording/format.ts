/**
 * A traffic recording: what Warden read from Nomad (and Consul) during one command, in one NDJSON
 * file. The first line is the header (which command ran, on which addresses, from when); each
 * further line is one step of one exchange, at `t` ms after the start on the command's clock:
 *
 *   {"t":0,"id":1,"type":"response","origin":"http://…:4646","method":"GET","path":"/v1/allocations?namespace=default","status":200,"headers":{"x-nomad-index":"42"}}
 *   {"t":3,"id":1,"type":"body","text":"[…]"}                  the whole body (text())
 *   {"t":9,"id":2,"type":"chunk","text":"{}\n"}                 a piece of a streamed body (chunks())
 *   {"t":9,"id":2,"type":"end"}                                 the streamed body ended (or failed: "error")
 *   {"t":5,"id":3,"type":"failure",…,"error":"connect ECONNREFUSED"}   no answer at all
 *   {"t":5,"type":"random","value":0.73}                        a draw of reconnect jitter, in order
 *   {"t":60000,"type":"stop"}                                   the recording ended here
 *
 * `aborted: true` marks what Warden itself cut short (a time limit, a reconnect, the command's end):
 * a replay lets the same cut happen again rather than playing it. Request headers are never
 * written (the token travels in them), and the configured tokens are replaced wherever else they
 * would appear.
 */
import { readFileSync } from 'node:fs';
import type { HttpMethod } from '../transport.js';

export const RECORDING_FORMAT = 'warden-recording';
export const RECORDING_VERSION = 1;

export interface RecordingHeader {
  readonly format: typeof RECORDING_FORMAT;
  readonly version: number;
  /** Epoch ms on the recording command's clock at t = 0. */
  readonly start: number;
  /** The command that was recorded and its options (what a replay runs again). */
  readonly command: { readonly name: string; readonly options: Readonly<Record<string, unknown>> };
  /** The NOMAD_* / CONSUL_* settings it ran with, tokens and certificate paths left out. */
  readonly env: Readonly<Record<string, string>>;
}

interface Step {
  readonly t: number;
}

export interface ResponseEntry extends Step {
  readonly type: 'response';
  readonly id: number;
  readonly origin: string;
  readonly method: HttpMethod;
  readonly path: string;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
}

export interface FailureEntry extends Step {
  readonly type: 'failure';
  readonly id: number;
  readonly origin: string;
  readonly method: HttpMethod;
  readonly path: string;
  readonly error: string;
  readonly aborted?: true;
}

export interface BodyEntry extends Step {
  readonly type: 'body';
  readonly id: number;
  readonly text: string;
}

export interface ChunkEntry extends Step {
  readonly type: 'chunk';
  readonly id: number;
  readonly text: string;
}

export interface EndEntry extends Step {
  readonly type: 'end';
  readonly id: number;
  readonly error?: string;
  readonly aborted?: true;
}

/** The other input of a run besides the cluster's answers: the jitter of its reconnect back-off. */
export interface RandomEntry extends Step {
  readonly type: 'random';
  readonly value: number;
}

export interface StopEntry extends Step {
  readonly type: 'stop';
}

export type RecordingEntry = ResponseEntry | FailureEntry | BodyEntry | ChunkEntry | EndEntry | RandomEntry | StopEntry;

export interface TrafficRecording {
  readonly header: RecordingHeader;
  readonly entries: readonly RecordingEntry[];
  /** Epoch ms where the recording ends: its stop, else its last step. */
  readonly endsAt: number;
}

/** Raised for a file that is not a recording this version of Warden reads. */
export class TrafficRecordingError extends Error {
  readonly code = 'WARDEN_TRAFFIC_RECORDING';

  constructor(message: string, readonly source: string) {
    super(`${source}: ${message}`);
    this.name = 'TrafficRecordingError';
  }
}

const ENTRY_FIELDS: Readonly<Record<RecordingEntry['type'], readonly string[]>> = {
  response: ['id', 'origin', 'method', 'path', 'status', 'headers'],
  failure: ['id', 'origin', 'method', 'path', 'error'],
  body: ['id', 'text'],
  chunk: ['id', 'text'],
  end: ['id'],
  random: ['value'],
  stop: [],
};

function parseLine(line: string, number: number, source: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    throw new TrafficRecordingError(`line ${number} is not JSON`, source);
  }
}

function checkEntry(value: unknown, number: number, source: string): RecordingEntry {
  const entry = value as Partial<Record<string, unknown>> | null;
  const fields = typeof entry?.type === 'string' ? ENTRY_FIELDS[entry.type as RecordingEntry['type']] : undefined;
  if (entry === null || fields === undefined || typeof entry.t !== 'number' || fields.some((field) => entry[field] === undefined)) {
    throw new TrafficRecordingError(`line ${number} is not a recording step (t, type and the fields of its type)`, source);
  }
  return entry as unknown as RecordingEntry;
}

export function parseTrafficRecording(text: string, source = 'recording'): TrafficRecording {
  const lines = text.split('\n');
  const header = parseLine(lines[0] ?? '', 1, source) as Partial<RecordingHeader> | null;
  if (header?.format !== RECORDING_FORMAT) throw new TrafficRecordingError('not a Warden recording (no header line)', source);
  if (header.version !== RECORDING_VERSION) throw new TrafficRecordingError(`recording version ${String(header.version)}; this Warden reads version ${RECORDING_VERSION}`, source);
  if (typeof header.start !== 'number' || typeof header.command?.name !== 'string' || typeof header.env !== 'object') {
    throw new TrafficRecordingError('the header lacks start, command or env', source);
  }
  const entries: RecordingEntry[] = [];
  lines.slice(1).forEach((line, i) => {
    // A recording cut off mid-line (the recorder was killed) keeps everything before it.
    if (line.trim() === '' || (i === lines.length - 2 && !line.endsWith('}'))) return;
    entries.push(checkEntry(parseLine(line, i + 2, source), i + 2, source));
  });
  const stop = entries.find((entry) => entry.type === 'stop');
  const last = stop?.t ?? entries.reduce((latest, entry) => Math.max(latest, entry.t), 0);
  return { header: header as RecordingHeader, entries, endsAt: header.start + last };
}

export function readTrafficRecording(path: string): TrafficRecording {
  return parseTrafficRecording(readFileSync(path, 'utf8'), path);
}
