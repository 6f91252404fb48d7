/**
 * POST /v1/jobs/parse for the fake: a small HCL2 reader (blocks, attributes, strings with escapes
 * and heredocs, numbers, booleans, lists, objects, comments; no expressions, functions or
 * variables) and the mapping of the job block to an api.Job as Nomad's parser returns it (unset
 * fields null, durations in nanoseconds). Enough for ordinary job files; anything beyond the
 * subset is a 400 naming the line, never a guess.
 */
import { NomadApiError } from './errors.js';
import { parseGoDuration } from './goText.js';
import type { JsonObject } from './jobSpec.js';

type Value = string | number | boolean | null | Value[] | { [key: string]: Value };

interface Block {
  type: string;
  labels: string[];
  body: Body;
}

interface Body {
  attributes: Map<string, Value>;
  blocks: Block[];
}

class HclReader {
  private pos = 0;

  constructor(private readonly text: string) {}

  fail(message: string): never {
    const before = this.text.slice(0, this.pos);
    const line = before.split('\n').length;
    const column = this.pos - before.lastIndexOf('\n');
    throw new NomadApiError(400, `input.hcl:${line},${column}: ${message}`);
  }

  /** Skips blanks and comments; newlines too unless `keepNewlines`. */
  private skip(keepNewlines = false): void {
    for (;;) {
      const rest = this.text.slice(this.pos);
      const match = (keepNewlines ? /^(?:[ \t\r]+|#[^\n]*|\/\/[^\n]*|\/\*[\s\S]*?\*\/)/ : /^(?:\s+|#[^\n]*|\/\/[^\n]*|\/\*[\s\S]*?\*\/)/).exec(rest);
      if (!match) return;
      this.pos += match[0].length;
    }
  }

  private peek(): string {
    this.skip();
    return this.text[this.pos] ?? '';
  }

  private expect(char: string): void {
    if (this.peek() !== char) this.fail(`expected "${char}"`);
    this.pos++;
  }

  private identifier(): string {
    this.skip();
    const match = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(this.text.slice(this.pos));
    if (!match) this.fail('Argument or block definition required');
    this.pos += match[0].length;
    return match[0];
  }

  body(end: string): Body {
    const body: Body = { attributes: new Map(), blocks: [] };
    while (this.peek() !== end) {
      if (this.peek() === '') this.fail(end === '' ? 'unexpected end' : `expected "${end}" before end of file`);
      const name = this.identifier();
      if (this.peek() === '=') {
        this.pos++;
        body.attributes.set(name, this.value());
        continue;
      }
      const labels: string[] = [];
      while (this.peek() === '"') labels.push(this.string());
      this.expect('{');
      body.blocks.push({ type: name, labels, body: this.body('}') });
      this.expect('}');
    }
    return body;
  }

  private string(): string {
    this.expect('"');
    let out = '';
    for (;;) {
      const char = this.text[this.pos++];
      if (char === undefined || char === '\n') this.fail('Unterminated template string');
      if (char === '"') return out;
      if (char === '\\') {
        const escaped = this.text[this.pos++] ?? '';
        const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '"': '"', '\\': '\\' };
        if (escaped in simple) out += simple[escaped];
        else if (escaped === 'u') {
          out += String.fromCodePoint(parseInt(this.text.slice(this.pos, this.pos + 4), 16));
          this.pos += 4;
        } else this.fail(`invalid escape "\\${escaped}"`);
      } else if (char === '$' && this.text.startsWith('${', this.pos)) {
        // "$${" is HCL's escape for a literal "${".
        out += '$';
        this.pos++;
      } else out += char;
    }
  }

  private heredoc(): string {
    const match = /^<<(-?)([A-Za-z_][A-Za-z0-9_]*)[ \t]*\n/.exec(this.text.slice(this.pos));
    if (!match) this.fail('invalid heredoc');
    this.pos += match[0].length;
    const end = new RegExp(`^[ \\t]*${match[2]}[ \\t]*$`, 'm');
    const rest = this.text.slice(this.pos);
    const found = end.exec(rest);
    if (!found) this.fail(`heredoc without closing marker ${match[2]}`);
    let lines = rest.slice(0, found.index).split('\n').slice(0, -1);
    this.pos += found.index + found[0].length;
    if (match[1] === '-') {
      const indent = Math.min(...lines.filter((l) => l.trim() !== '').map((l) => /^[ \t]*/.exec(l)![0].length));
      lines = lines.map((l) => l.slice(Number.isFinite(indent) ? indent : 0));
    }
    return lines.map((l) => `${l}\n`).join('');
  }

  value(): Value {
    const char = this.peek();
    if (char === '"') return this.string();
    if (char === '<') return this.heredoc();
    if (char === '[') return this.list();
    if (char === '{') return this.object();
    const rest = this.text.slice(this.pos);
    const number = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(rest);
    if (number) {
      this.pos += number[0].length;
      return Number(number[0]);
    }
    const word = /^(true|false|null)\b/.exec(rest);
    if (word) {
      this.pos += word[0].length;
      return word[1] === 'null' ? null : word[1] === 'true';
    }
    return this.fail('expressions, functions and variables are beyond what the fake parses');
  }

  private list(): Value[] {
    this.expect('[');
    const items: Value[] = [];
    while (this.peek() !== ']') {
      items.push(this.value());
      if (this.peek() === ',') this.pos++;
      else if (this.peek() !== ']') this.fail('expected "," or "]"');
    }
    this.pos++;
    return items;
  }

  private object(): { [key: string]: Value } {
    this.expect('{');
    const object: { [key: string]: Value } = {};
    while (this.peek() !== '}') {
      const key = this.peek() === '"' ? this.string() : this.identifier();
      if (this.peek() !== '=' && this.peek() !== ':') this.fail('expected "=" in object');
      this.pos++;
      object[key] = this.value();
      if (this.peek() === ',') this.pos++;
    }
    this.pos++;
    return object;
  }
}

// ---------------------------------------------------------------------------------------------
// Job block → api.Job

const pascal = (name: string): string => name.split('_').map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('');

/** HCL names whose api field is not their PascalCase. */
const RENAMES: Record<string, string> = {
  cpu: 'CPU', memory: 'MemoryMB', memory_max: 'MemoryMaxMB', size: 'SizeMB', iops: 'IOPS',
  restart: 'RestartPolicy', reschedule: 'ReschedulePolicy', ephemeral_disk: 'EphemeralDisk',
};

const DURATIONS = /(_time|_deadline|^delay|^interval|^stagger|^kill_timeout|^max_delay|^shutdown_delay|^max_client_disconnect|^stop_after_client_disconnect)$/;

/** Blocks whose content is the driver's or the user's own map: keys kept as written. */
const FREE_FORM = new Set(['config', 'env', 'meta']);

function attributeValue(name: string, value: Value, reader: HclReader): Value {
  if (typeof value === 'string' && DURATIONS.test(name)) {
    const ns = parseGoDuration(value);
    if (ns === undefined) reader.fail(`${name}: invalid duration ${JSON.stringify(value)}`);
    return ns;
  }
  return value;
}

function blockObject(block: Block, reader: HclReader): JsonObject {
  if (FREE_FORM.has(block.type)) return Object.fromEntries([...block.body.attributes].map(([k, v]) => [k, v]));
  const object: JsonObject = {};
  for (const [name, value] of block.body.attributes) object[RENAMES[name] ?? pascal(name)] = attributeValue(name, value, reader);
  for (const child of block.body.blocks) object[RENAMES[child.type] ?? pascal(child.type)] = blockObject(child, reader);
  return object;
}

function nulls(names: string): JsonObject {
  return Object.fromEntries(names.split(' ').map((name) => [name, null]));
}

const JOB = nulls('Affinities AllAtOnce Constraints ConsulNamespace ConsulToken CreateIndex Datacenters ID JobModifyIndex Meta Migrate ModifyIndex Multiregion Name Namespace NomadTokenID ParameterizedJob ParentID Payload Periodic Priority Region Reschedule Spreads Stable Status StatusDescription Stop SubmitTime TaskGroups Type Update VaultNamespace VaultToken Version');
const GROUP = nulls('Affinities Constraints Consul Count EphemeralDisk Meta Migrate Name Networks ReschedulePolicy RestartPolicy Scaling Services ShutdownDelay Spreads StopAfterClientDisconnect Tasks Update Volumes');
const TASK = { ...nulls('Affinities Artifacts Config Constraints DispatchPayload Driver Env KillTimeout Lifecycle LogConfig Meta Name Resources RestartPolicy ScalingPolicies Services Templates Vault VolumeMounts'), KillSignal: '', Kind: '', Leader: false, ShutdownDelay: 0, User: '' };
const RESOURCES = nulls('CPU Cores Devices DiskMB IOPS MemoryMB MemoryMaxMB Networks');
const UPDATE = nulls('AutoPromote AutoRevert Canary HealthCheck HealthyDeadline MaxParallel MinHealthyTime ProgressDeadline Stagger');

/** Lays the block's fields over an api template; nested blocks of the listed types become lists. */
function shaped(block: Block, template: JsonObject, reader: HclReader, lists: Record<string, (b: Block) => JsonObject> = {}): JsonObject {
  const object = { ...template, ...blockObject({ ...block, body: { ...block.body, blocks: block.body.blocks.filter((b) => !(b.type in lists)) } }, reader) };
  for (const [type, build] of Object.entries(lists)) {
    const children = block.body.blocks.filter((b) => b.type === type);
    if (children.length > 0) object[pascal(type) === 'Group' ? 'TaskGroups' : `${pascal(type)}s`] = children.map(build);
  }
  if (object.Update && block.body.blocks.some((b) => b.type === 'update')) object.Update = { ...UPDATE, ...(object.Update as JsonObject) };
  return object;
}

function labelled(block: Block, reader: HclReader): string {
  const [label] = block.labels;
  if (label === undefined || block.labels.length !== 1) reader.fail(`${block.type} block needs exactly one label`);
  return label;
}

function task(block: Block, reader: HclReader): JsonObject {
  const object = shaped(block, TASK, reader);
  if (object.Resources) object.Resources = { ...RESOURCES, ...(object.Resources as JsonObject) };
  return { ...object, Name: labelled(block, reader) };
}

function group(block: Block, reader: HclReader): JsonObject {
  return { ...shaped(block, GROUP, reader, { task: (b) => task(b, reader) }), Name: labelled(block, reader) };
}

/** Parses a job file into the api.Job Nomad's /v1/jobs/parse returns. */
export function parseJobHcl(text: string): JsonObject {
  const reader = new HclReader(text);
  const body = reader.body('');
  const jobs = body.blocks.filter((b) => b.type === 'job');
  if (jobs.length !== 1) reader.fail(jobs.length === 0 ? 'no job block' : 'more than one job block');
  const job = jobs[0]!;
  const id = labelled(job, reader);
  return { ...shaped(job, JOB, reader, { group: (b) => group(b, reader) }), Dispatched: false, ID: id, Name: (job.body.attributes.get('name') as string | undefined) ?? id };
}
