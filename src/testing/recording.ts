/**
 * Reader of the Nomad recordings in test/fixtures (see the fixtures README): event-stream captures
 * (`stream.jsonl`: one `{t, raw}` per received line), scenario folders (job.json, meta.json,
 * expected.json, job.hcl) and single HTTP exchanges (api/*.json). Depends on nothing but node:fs
 * and the lossless JSON reader, so any test or tool can use it.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseLossless, type LosslessJson } from './losslessJson.js';

/** One line of a recorded event stream: `raw` is the exact text Nomad sent, without the newline. */
export interface RecordedLine {
  /** Milliseconds from the stream's response headers to the chunk that completed the line. */
  readonly t: number;
  readonly raw: string;
}

/** Raised for a recording that does not have the documented format. */
export class RecordingFormatError extends Error {
  readonly code = 'WARDEN_RECORDING_FORMAT';

  constructor(
    message: string,
    readonly source: string,
  ) {
    super(`${source}: ${message}`);
    this.name = 'RecordingFormatError';
  }
}

/** Parses the text of a stream.jsonl file. */
export function parseStreamRecording(text: string, source = 'stream.jsonl'): RecordedLine[] {
  const lines: RecordedLine[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new RecordingFormatError(`line ${i + 1} is not JSON`, source);
    }
    const { t, raw } = (value ?? {}) as { t?: unknown; raw?: unknown };
    if (typeof t !== 'number' || typeof raw !== 'string') {
      throw new RecordingFormatError(`line ${i + 1} lacks a numeric "t" and a string "raw"`, source);
    }
    lines.push({ t, raw });
  });
  return lines;
}

export function readStreamRecording(path: string): RecordedLine[] {
  return parseStreamRecording(readFileSync(path, 'utf8'), path);
}

/** True for the `{}` heartbeat line. */
export function isHeartbeatLine(line: RecordedLine): boolean {
  return line.raw.trim() === '{}';
}

/** The documented part of a scenario's meta.json; the rest passes through. */
export interface ScenarioMeta {
  readonly scenario: string;
  readonly job_id: string;
  readonly stream_query: string;
  readonly raft_index_before: number;
  readonly stream_opened_at: string;
  readonly actions: readonly { readonly t: number; readonly action: string }[];
  readonly [key: string]: unknown;
}

/** The index the recording's stream asked for (`?index=N`, 0 if none): lines below it are Nomad's stale "closest batch". */
export function requestedIndex(scenario: Pick<Scenario, 'meta'>): number {
  return Number(/[?&]index=(\d+)/.exec(scenario.meta.stream_query)?.[1] ?? 0);
}

/** One scenario folder. JSON documents are parsed losslessly; `*Text` keeps the exact bytes. */
export interface Scenario {
  readonly name: string;
  readonly dir: string;
  readonly meta: ScenarioMeta;
  readonly stream: RecordedLine[];
  /** GET /v1/job/:id right after registration. */
  readonly job: LosslessJson;
  readonly jobText: string;
  /** Second version of the job (rolling updates), if recorded. */
  readonly jobV1?: LosslessJson;
  readonly hcl?: string;
  readonly hclV1?: string;
  readonly expected?: LosslessJson;
}

function readOptional(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}

export function readScenario(dir: string): Scenario {
  const jobText = readFileSync(join(dir, 'job.json'), 'utf8');
  const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as ScenarioMeta;
  const jobV1Text = readOptional(join(dir, 'job.v1.json'));
  const expectedText = readOptional(join(dir, 'expected.json'));
  return {
    name: meta.scenario,
    dir,
    meta,
    stream: readStreamRecording(join(dir, 'stream.jsonl')),
    job: parseLossless(jobText),
    jobText,
    ...(jobV1Text === undefined ? {} : { jobV1: parseLossless(jobV1Text) }),
    ...optionalText('hcl', readOptional(join(dir, 'job.hcl'))),
    ...optionalText('hclV1', readOptional(join(dir, 'job.v1.hcl'))),
    ...(expectedText === undefined ? {} : { expected: parseLossless(expectedText) }),
  };
}

function optionalText<K extends string>(key: K, text: string | undefined): Partial<Record<K, string>> {
  return text === undefined ? {} : ({ [key]: text } as Record<K, string>);
}

/** Names of the scenario folders under `root` (…/nomad-1.1.2/scenarios), sorted. */
export function listScenarios(root: string): string[] {
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

/** One recorded HTTP exchange (api/<name>.json). Bodies are the exact text. */
export interface ApiExchange {
  readonly name: string;
  readonly note?: string;
  readonly request: {
    readonly method: string;
    readonly path: string;
    readonly query: Readonly<Record<string, string | string[]>>;
    readonly headers: Readonly<Record<string, string>>;
    readonly body: string | null;
  };
  readonly response: {
    readonly status: number;
    readonly headers: Readonly<Record<string, string>>;
    readonly body: string;
  };
  readonly elapsed_ms?: number;
  /** Event-stream exchanges: the raft index when the request was made. */
  readonly raft_index_at_request?: number;
}

export function readApiExchange(path: string): ApiExchange {
  const value = JSON.parse(readFileSync(path, 'utf8')) as Omit<ApiExchange, 'name'>;
  const { request, response } = value as Partial<ApiExchange>;
  if (typeof request?.path !== 'string' || typeof response?.status !== 'number') {
    throw new RecordingFormatError('not an HTTP exchange ({request, response})', path);
  }
  const name = path.replace(/^.*\//, '').replace(/\.json$/, '');
  return { ...value, name };
}

/** All api/*.json exchanges under `dir`, sorted by name. */
export function readApiExchanges(dir: string): ApiExchange[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => readApiExchange(join(dir, file)));
}
