/**
 * Poseidon's configuration, read as Poseidon reads it (internal/config/config.go, openHPI/poseidon
 * d6c69f2): a YAML file (`-config <file>`, by default ./configuration.yaml in the working directory),
 * then POSEIDON_* variables over it, one per key, named `POSEIDON_` and the key's path upper-cased
 * (`nomad.tls.cafile` → POSEIDON_NOMAD_TLS_CAFILE). The keys are Poseidon's, lower case, with
 * Poseidon's types; YAML as go-yaml v3 decodes it into them (`30_000` is an integer, `yes` a boolean
 * where a boolean is expected, a plain scalar is a string where a string is).
 *
 * Stricter than Poseidon, never looser: Poseidon ignores a key it does not know, a variable it cannot
 * parse (with a warning) and a missing `-config` file; here each is an error naming it, all of them at
 * once. A variable may also set the float and unsigned keys (Poseidon reads only strings, integers and
 * booleans from variables). What Warden makes of the values is serveConfiguration.ts's business.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { LineCounter, isMap, isScalar, isSeq, parseDocument, type Node } from 'yaml';
import { goBool, type Env } from '../nomad/config.js';
import { registerSecret } from '../secrets.js';

export type ValueKind = 'string' | 'int' | 'uint' | 'float' | 'bool' | 'strings' | 'any';

interface Schema {
  readonly [key: string]: ValueKind | Schema;
}

const TLS: Schema = { active: 'bool', cafile: 'string', certfile: 'string', keyfile: 'string' };

/** Every key Poseidon's configuration struct decodes, with its type (Go's string, int, uint, float64, bool, []string; `any` for the rest). */
export const POSEIDON_SCHEMA: Schema = {
  server: {
    address: 'string',
    port: 'int',
    systemdsocketactivation: 'bool',
    token: 'string',
    tls: TLS,
    interactivestderr: 'bool',
    templatejobfile: 'string',
    alert: { prewarmingpoolthreshold: 'float', prewarmingpoolreloadtimeout: 'uint' },
    loggingfiltertoken: 'string',
  },
  nomad: {
    enabled: 'bool',
    address: 'string',
    port: 'int',
    token: 'string',
    tls: TLS,
    namespace: 'string',
    disableforcepull: 'bool',
    // Nomad's api.NetworkResource (Nomad 1.10's, as Poseidon links it).
    network: {
      mode: 'string',
      device: 'string',
      cidr: 'string',
      ip: 'string',
      hostname: 'string',
      mbits: 'int',
      dns: { servers: 'strings', searches: 'strings', options: 'strings' },
      reservedports: 'any',
      dynamicports: 'any',
      cni: 'any',
    },
  },
  aws: { enabled: 'bool', endpoint: 'string', functions: 'strings' },
  logger: { level: 'string', formatter: 'string' },
  profiling: { cpuenabled: 'bool', cpufile: 'string', memoryinterval: 'uint', memorythreshold: 'uint' },
  // sentry-go 0.36's ClientOptions, the fields YAML can set (and profilessamplerate, which Poseidon's example documents).
  sentry: {
    dsn: 'string',
    debug: 'bool',
    attachstacktrace: 'bool',
    samplerate: 'float',
    enabletracing: 'bool',
    tracessamplerate: 'float',
    profilessamplerate: 'float',
    ignoreerrors: 'strings',
    ignoretransactions: 'strings',
    senddefaultpii: 'bool',
    servername: 'string',
    release: 'string',
    dist: 'string',
    environment: 'string',
    maxbreadcrumbs: 'int',
    maxspans: 'int',
    httpproxy: 'string',
    httpsproxy: 'string',
    maxerrordepth: 'int',
    tags: 'any',
    enablelogs: 'bool',
    traceignorestatuscodes: 'any',
  },
  influxdb: { url: 'string', token: 'string', organization: 'string', bucket: 'string', stage: 'string' },
};

/** Poseidon's default file, looked up in the working directory. */
export const DEFAULT_CONFIGURATION_FILE = 'configuration.yaml';

export const VARIABLE_PREFIX = 'POSEIDON_';

export type ConfigValue = string | number | boolean | readonly string[] | unknown;

export interface Setting {
  readonly value: ConfigValue;
  /** Where it was set: `<file>:<line>` or the variable's name. */
  readonly from: string;
}

export interface PoseidonConfiguration {
  /** The file read, if any, as the user named it. */
  readonly file?: string;
  /** The POSEIDON_* variables read. */
  readonly variables: readonly string[];
  /** The keys set, by path (`server.port`); a variable's over the file's. */
  readonly settings: ReadonlyMap<string, Setting>;
}

/** A configuration that cannot be used: every problem, each naming its key or variable. */
export class PoseidonConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.length === 1 ? problems[0] : `the Poseidon configuration has ${problems.length} problems:\n${problems.map((problem) => `  ${problem}`).join('\n')}`);
    this.name = 'PoseidonConfigError';
  }
}

export interface ReadOptions {
  /** The file (`--config`); undefined: ./configuration.yaml when it exists; false: none. */
  file?: string | false;
  cwd: string;
  env: Env;
}

/** Every leaf key's path, with its kind. */
function leaves(schema: Schema, prefix = ''): [string, ValueKind][] {
  return Object.entries(schema).flatMap(([key, entry]) => (typeof entry === 'string' ? [[`${prefix}${key}`, entry] as [string, ValueKind]] : leaves(entry, `${prefix}${key}.`)));
}

const LEAVES = new Map(leaves(POSEIDON_SCHEMA));

/** The variable that sets a key, as Poseidon names it. */
export function variableOf(path: string): string {
  return `${VARIABLE_PREFIX}${path.replaceAll('.', '_').toUpperCase()}`;
}

const KEY_OF_VARIABLE = new Map([...LEAVES.keys()].map((path) => [variableOf(path), path]));

/** Keys holding credentials: registered as secrets, their values never quoted in a problem. */
const isSecret = (path: string): boolean => /(token|dsn)$/.test(path);

/** Notes where a key got its value, registering it as a secret when it is one. */
function set(settings: Map<string, Setting>, path: string, setting: Setting): void {
  if (isSecret(path) && typeof setting.value === 'string') registerSecret(setting.value);
  settings.set(path, setting);
}

const shown = (path: string, value: unknown): string => (isSecret(path) ? 'a value of another type' : JSON.stringify(value));

/** Edit distance, for "did you mean". */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next.push(Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    row = next;
  }
  return row[b.length]!;
}

function suggestion(name: string, candidates: Iterable<string>): string {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = distance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(name.length / 3)) ? ` (did you mean ${best}?)` : '';
}

const EXPECTED: Readonly<Record<ValueKind, string>> = {
  string: 'a string',
  int: 'an integer',
  uint: 'a non-negative integer',
  float: 'a number',
  bool: 'true or false',
  strings: 'a list of strings',
  any: 'a value',
};

/** A YAML node as go-yaml decodes it into a field of this kind; undefined when it cannot be. */
function fromYaml(node: Node, kind: ValueKind): ConfigValue | undefined {
  if (kind === 'any') return node.toJSON() as unknown;
  if (kind === 'strings') {
    if (!isSeq(node)) return undefined;
    const items = node.items.map((item) => (isScalar(item) && item.value !== null ? String(item.source ?? item.value) : undefined));
    return items.every((item) => item !== undefined) ? items : undefined;
  }
  if (!isScalar(node)) return undefined;
  const { value } = node;
  switch (kind) {
    // A plain scalar is a string where a string is expected, as written (`no` stays "no", `0123` "0123").
    case 'string':
      return String(node.source ?? value);
    case 'bool':
      return typeof value === 'boolean' ? value : undefined;
    case 'float':
      return typeof value === 'number' ? value : undefined;
    case 'int':
    case 'uint':
      return typeof value === 'number' && Number.isSafeInteger(value) && (kind === 'int' || value >= 0) ? value : undefined;
  }
}

/** A variable's text as this kind; undefined when it cannot be. */
function fromVariable(text: string, kind: ValueKind): ConfigValue | undefined {
  switch (kind) {
    case 'string':
      return text;
    case 'bool':
      return goBool(text);
    case 'int':
    case 'uint':
      return (kind === 'int' ? /^[+-]?\d+$/ : /^\+?\d+$/).test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : undefined;
    case 'float': {
      const value = Number(text);
      return Number.isFinite(value) ? value : undefined;
    }
    // Space-separated, the whole perhaps in quotes (Poseidon's POSEIDON_AWS_FUNCTIONS="a b").
    case 'strings':
      return text.replace(/^"(.*)"$/s, '$1').split(/\s+/).filter((part) => part !== '');
    case 'any':
      return undefined;
  }
}

/** Reads `path`, naming it `name` (as the user wrote it) in settings and problems. */
function readFile(path: string, name: string, settings: Map<string, Setting>, problems: string[]): void {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    problems.push(`${name}: cannot read it: ${(error as Error).message}`);
    return;
  }
  const lines = new LineCounter();
  const document = parseDocument(text, { version: '1.1', lineCounter: lines, prettyErrors: false });
  const at = (node: { range?: [number, number, number] | null } | null | undefined): string => (node?.range ? `${name}:${lines.linePos(node.range[0]).line}` : name);
  if (document.errors.length > 0) {
    for (const error of document.errors) problems.push(`${name}:${lines.linePos(error.pos[0]).line}: not valid YAML: ${error.message.split('\n')[0]}`);
    return;
  }
  const walk = (node: Node | null, schema: Schema, prefix: string): void => {
    if (node === null || (isScalar(node) && node.value === null)) return;
    if (!isMap(node)) {
      problems.push(`${at(node)}: ${prefix === '' ? 'the configuration' : prefix.slice(0, -1)}: expected a mapping of keys`);
      return;
    }
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      const path = `${prefix}${key}`;
      const entry = schema[key];
      const value = pair.value as Node | null;
      if (entry === undefined) {
        problems.push(`${at(pair.key as Node)}: ${path}: not a key of Poseidon's configuration${suggestion(key, Object.keys(schema))}`);
      } else if (typeof entry !== 'string') {
        walk(value, entry, `${path}.`);
      } else if (value !== null && !(isScalar(value) && value.value === null)) {
        const decoded = fromYaml(value, entry);
        if (decoded === undefined) problems.push(`${at(value)}: ${path}: expected ${EXPECTED[entry]}, got ${shown(path, value.toJSON())}`);
        else set(settings, path, { value: decoded, from: at(value) });
      }
    }
  };
  walk(document.contents as Node | null, POSEIDON_SCHEMA, '');
}

function readVariables(env: Env, settings: Map<string, Setting>, problems: string[]): string[] {
  const read: string[] = [];
  for (const name of Object.keys(env).filter((variable) => variable.startsWith(VARIABLE_PREFIX)).sort()) {
    const text = env[name]?.trim();
    // Blank is unset, as for every variable Warden reads.
    if (text === undefined || text === '') continue;
    const path = KEY_OF_VARIABLE.get(name);
    if (path === undefined) {
      problems.push(`${name}: not a variable of Poseidon's configuration${suggestion(name, KEY_OF_VARIABLE.keys())}`);
      continue;
    }
    const kind = LEAVES.get(path)!;
    const value = fromVariable(text, kind);
    if (value === undefined) {
      problems.push(kind === 'any' ? `${name}: ${path} cannot be set from a variable (in Poseidon neither); set it in the file` : `${name}: expected ${EXPECTED[kind]}, got ${shown(path, text)}`);
      continue;
    }
    set(settings, path, { value, from: name });
    read.push(name);
  }
  return read;
}

/** The file (as `file` says) and POSEIDON_* variables of `env`; throws PoseidonConfigError naming every problem. */
export function readPoseidonConfiguration(options: ReadOptions): PoseidonConfiguration {
  const settings = new Map<string, Setting>();
  const problems: string[] = [];
  // Poseidon reads its default file when it exists, and uses its defaults without a word when a named one does not.
  const named = typeof options.file === 'string' ? options.file : options.file === undefined && existsSync(resolve(options.cwd, DEFAULT_CONFIGURATION_FILE)) ? DEFAULT_CONFIGURATION_FILE : undefined;
  const file = named === undefined ? undefined : resolve(options.cwd, named);
  if (named !== undefined && file !== undefined) {
    if (existsSync(file)) readFile(file, named, settings, problems);
    else problems.push(`${named}: no such configuration file`);
  }
  const variables = readVariables(options.env, settings, problems);
  if (problems.length > 0) throw new PoseidonConfigError(problems);
  return { ...(named === undefined ? {} : { file: named }), variables, settings };
}
