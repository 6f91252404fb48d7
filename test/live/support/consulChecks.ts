/**
 * Checks-mode scenarios on the live agents: jobs whose service checks the test controls, Consul's
 * agent API to set a check's status, Nomad's own verdict followed with blocking queries, and
 * `warden watch --json` run in-process (and recorded) beside it, so that each allocation's verdict,
 * time and reasons can be set against Nomad's.
 *
 * The task is a tiny HTTP server (python3, which raw_exec finds on the agents' clean PATH): GET
 * <path> answers the status code set for that path, PUT <path> with a code as its body sets it. An
 * HTTP check passes on 2xx, warns on 429 and is critical on anything else (Consul's rule). Script
 * checks (registered by Nomad in Consul as TTL checks) run once at the task's start, every hour
 * after, so their status afterwards is whatever the test sets through Consul's agent API.
 */
import { request } from 'undici';
import { systemClock } from '../../../src/clock/index.js';
import { watch } from '../../../src/cli/watchCommand.js';
import { withRecording } from '../../../src/cli/recording.js';
import type { NomadClient } from '../../../src/nomad/client.js';
import type { AllocationListStub } from '../../../src/nomad/types.js';
import { liveAgents, liveEnv } from './live.js';

export type CheckStatus = 'passing' | 'warning' | 'critical';
export type OnUpdate = 'require_healthy' | 'ignore_warnings' | 'ignore';

export type CaseCheck =
  /** An HTTP check of `path` on the task's server, which answers `code` until told otherwise. */
  | { readonly kind: 'http'; readonly name?: string; readonly path: string; readonly code: number; readonly onUpdate?: OnUpdate }
  /** A script check whose one run prints `script-ran` and exits `exit`; afterwards the test sets it. */
  | { readonly kind: 'script'; readonly name: string; readonly exit: number; readonly onUpdate?: OnUpdate }
  /** A check Nomad cannot register on raw_exec (address_mode = "driver"): its service never reaches Consul. */
  | { readonly kind: 'unregistrable'; readonly name: string };

export interface CaseService {
  readonly name: string;
  /** A group-level service, or one of the task. */
  readonly level: 'group' | 'task';
  readonly onUpdate?: OnUpdate;
  readonly checks: readonly CaseCheck[];
}

export interface CaseJob {
  readonly services: readonly CaseService[];
  readonly minHealthyTimeS: number;
  readonly healthyDeadlineS: number;
  /** The task exits 1 once, a second after its first start, and is restarted (delay 1 s). */
  readonly restartOnce?: boolean;
}

export const GROUP = 'web';
export const TASK = 'app';

const SERVER = `import http.server, json, os, sys, time
port = int(sys.argv[1])
codes = json.loads(sys.argv[2])
marker = os.path.join(os.environ.get('NOMAD_TASK_DIR', '.'), 'started-once')
if sys.argv[3] == '1' and not os.path.exists(marker):
    open(marker, 'w').close()
    time.sleep(1)
    sys.exit(1)
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.reply(codes.get(self.path, 404))
    def do_PUT(self):
        codes[self.path] = int(self.rfile.read(int(self.headers.get('Content-Length', '0'))))
        self.reply(200)
    def reply(self, code):
        self.send_response(code)
        self.send_header('Content-Length', '2')
        self.end_headers()
        self.wfile.write(b'ok')
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(('127.0.0.1', port), Handler).serve_forever()
`;

/** An HCL string literal (HCL's escapes are JSON's); refuses text HCL would interpolate. */
function hclString(text: string): string {
  if (/[$%]\{/.test(text)) throw new Error(`not a literal for HCL: ${text}`);
  return JSON.stringify(text);
}

function checkHcl(check: CaseCheck, level: CaseService['level']): string {
  const lines: string[] = [];
  if (check.name !== undefined) lines.push(`name = ${hclString(check.name)}`);
  switch (check.kind) {
    case 'http':
      lines.push('type = "http"', `path = ${hclString(check.path)}`, 'interval = "1s"', 'timeout = "1s"');
      break;
    case 'script':
      lines.push('type = "script"', 'command = "/bin/sh"', `args = ["-c", ${hclString(`echo script-ran; exit ${check.exit}`)}]`, 'interval = "1h"', 'timeout = "5s"');
      // A group service's script check runs in one of the group's tasks.
      if (level === 'group') lines.push(`task = "${TASK}"`);
      break;
    case 'unregistrable':
      lines.push('type = "tcp"', 'address_mode = "driver"', 'port = 8080', 'interval = "1s"', 'timeout = "1s"');
      break;
  }
  if (check.kind !== 'unregistrable' && check.onUpdate !== undefined) lines.push(`on_update = "${check.onUpdate}"`);
  return `check {\n${lines.map((line) => `  ${line}`).join('\n')}\n}`;
}

function serviceHcl(service: CaseService): string {
  const lines = [`name = ${hclString(service.name)}`, 'port = "http"'];
  if (service.onUpdate !== undefined) lines.push(`on_update = "${service.onUpdate}"`);
  const body = [...lines, ...service.checks.map((check) => checkHcl(check, service.level))].join('\n');
  return `service {\n${body.replace(/^/gm, '  ')}\n}`;
}

function indent(text: string, by: number): string {
  return text.replace(/^(?=.)/gm, ' '.repeat(by));
}

/** The job's HCL: one group `web` with one raw_exec task `app` running the control server. */
export function caseJobHcl(id: string, job: CaseJob): string {
  const codes: Record<string, number> = {};
  for (const service of job.services) for (const check of service.checks) if (check.kind === 'http') codes[check.path] = check.code;
  const groupServices = job.services.filter((service) => service.level === 'group').map(serviceHcl).join('\n');
  const taskServices = job.services.filter((service) => service.level === 'task').map(serviceHcl).join('\n');
  const args = [hclString('-c'), hclString(SERVER), '"${NOMAD_PORT_http}"', hclString(JSON.stringify(codes)), job.restartOnce === true ? '"1"' : '"0"'];
  return `job "${id}" {
  datacenters = ["dc1"]
  update {
    health_check      = "checks"
    min_healthy_time  = "${job.minHealthyTimeS}s"
    healthy_deadline  = "${job.healthyDeadlineS}s"
    progress_deadline = "${job.healthyDeadlineS + 20}s"
  }
  group "${GROUP}" {
    restart {
      attempts = 2
      interval = "5m"
      delay    = "1s"
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    network {
      port "http" {}
    }
${indent(groupServices, 4)}
    task "${TASK}" {
      driver = "raw_exec"
      config {
        command = "/usr/bin/python3"
        args    = [${args.join(', ')}]
      }
      resources {
        cpu    = 50
        memory = 64
      }
${indent(taskServices, 6)}
    }
  }
}
`;
}

/** One check of Consul's catalogue (/v1/health/state/any). */
export interface ConsulCheck {
  Node: string;
  CheckID: string;
  Name: string;
  Status: string;
  Output: string;
  ServiceID: string;
  ServiceName: string;
  Type: string;
  ModifyIndex: number;
}

async function consulJson<T>(method: 'GET' | 'PUT', path: string, body?: string): Promise<{ body: T; index: number }> {
  const response = await request(`${liveAgents().consul}${path}`, { method, ...(body === undefined ? {} : { body }), headersTimeout: 0, bodyTimeout: 0, reset: true });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`Consul ${method} ${path}: ${response.statusCode} ${text}`);
  return { body: (text === '' ? undefined : JSON.parse(text)) as T, index: Number(response.headers['x-consul-index'] ?? 0) };
}

/**
 * Waits, on Consul's blocking queries, until the catalogue's checks satisfy `done`; resolves to
 * them. Bounded by `timeoutMs`.
 */
export async function untilConsulChecks(what: string, done: (checks: ConsulCheck[]) => boolean, timeoutMs = 30_000): Promise<ConsulCheck[]> {
  const deadline = performance.now() + timeoutMs;
  let index = 0;
  let last: ConsulCheck[] = [];
  for (;;) {
    const left = deadline - performance.now();
    if (left <= 0) throw new Error(`waited ${timeoutMs} ms for ${what}; last checks: ${JSON.stringify(last).slice(0, 2_000)}`);
    const wait = Math.max(1, Math.min(2_000, Math.floor(left)));
    const answer = await consulJson<ConsulCheck[]>('GET', `/v1/health/state/any${index > 0 ? `?index=${index}&wait=${wait}ms` : ''}`);
    last = answer.body;
    if (done(last)) return last;
    index = answer.index;
  }
}

/**
 * Waits until the Consul agent's own checks (/v1/agent/checks, what Nomad's tracker reads) satisfy
 * `done`. A change of a check's output alone reaches the catalogue only after Consul's
 * check_update_interval (5 min by default); the agent shows it at once.
 */
export async function untilAgentChecks(what: string, done: (checks: ConsulCheck[]) => boolean, timeoutMs = 30_000): Promise<ConsulCheck[]> {
  const deadline = performance.now() + timeoutMs;
  let last: ConsulCheck[] = [];
  for (;;) {
    last = Object.values((await consulJson<Record<string, ConsulCheck>>('GET', '/v1/agent/checks')).body);
    if (done(last)) return last;
    if (performance.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}; last agent checks: ${JSON.stringify(last).slice(0, 2_000)}`);
    // The agent's check list cannot block: a bounded poll, at Nomad's own tracker's pace.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The checks Nomad registered for `allocId`. */
export function allocationChecks(checks: readonly ConsulCheck[], allocId: string): ConsulCheck[] {
  return checks.filter((check) => check.ServiceID.startsWith(`_nomad-task-${allocId}-`));
}

const TTL_VERBS: Record<CheckStatus, string> = { passing: 'pass', warning: 'warn', critical: 'fail' };

/** Sets a TTL check's status on the Consul agent (as Nomad's script checks do), and waits until the catalogue shows it. */
export async function setCheckStatus(checkId: string, status: CheckStatus): Promise<void> {
  const note = `set by the test: ${status}`;
  await consulJson('PUT', `/v1/agent/check/${TTL_VERBS[status]}/${encodeURIComponent(checkId)}?note=${encodeURIComponent(note)}`);
  await untilConsulChecks(`check ${checkId} ${status}`, (checks) => checks.some((check) => check.CheckID === checkId && check.Status === status && check.Output === note));
}

/** The host port of the allocation's `http` port (where its server and its HTTP checks are). */
export async function httpPort(client: NomadClient, allocId: string): Promise<number> {
  const { body } = await client.getAllocation(allocId);
  const port = body.AllocatedResources?.Shared?.Ports?.find((mapping) => mapping.Label === 'http')?.Value;
  if (typeof port !== 'number') throw new Error(`allocation ${allocId} has no http port`);
  return port;
}

/** Sets what the task's server answers on `path` (an HTTP check of it follows within its interval). */
export async function setServerCode(port: number, path: string, code: number): Promise<void> {
  const response = await request(`http://127.0.0.1:${port}${path}`, { method: 'PUT', body: String(code), reset: true });
  await response.body.text();
  if (response.statusCode !== 200) throw new Error(`the task's server refused PUT ${path}: ${response.statusCode}`);
}

/** Nomad's verdict on an allocation, as its client set it, and when the test saw it arrive. */
export interface NomadVerdict {
  readonly allocId: string;
  readonly healthy: boolean;
  /** DeploymentStatus.Timestamp, epoch ms. */
  readonly at: number;
  /** Each task's "Alloc Unhealthy" message. */
  readonly events: Readonly<Record<string, string>>;
  /** Wall time (epoch ms) the update reached the test's blocking query. */
  readonly seenAt: number;
}

/** The job's first allocation, as soon as Nomad lists it. */
export async function firstAllocation(client: NomadClient, jobId: string, timeoutMs = 30_000): Promise<AllocationListStub> {
  const deadline = performance.now() + timeoutMs;
  let index = 0;
  for (;;) {
    if (performance.now() > deadline) throw new Error(`no allocation of ${jobId} within ${timeoutMs} ms`);
    const { body, meta } = await client.jobAllocations(jobId, { index, waitMs: 2_000 });
    const [first] = [...body].sort((a, b) => (a.CreateIndex ?? 0) - (b.CreateIndex ?? 0));
    if (first !== undefined) return first;
    index = Math.max(index, meta.lastIndex);
  }
}

/** Follows an allocation with blocking queries until Nomad's client sets its health. */
export async function nomadVerdict(client: NomadClient, jobId: string, allocId: string, timeoutMs: number): Promise<NomadVerdict> {
  const deadline = performance.now() + timeoutMs;
  let index = 0;
  for (;;) {
    if (performance.now() > deadline) throw new Error(`Nomad set no health on ${allocId} within ${timeoutMs} ms`);
    const { body, meta } = await client.jobAllocations(jobId, { index, waitMs: 2_000 });
    const seenAt = systemClock.now();
    const allocation = body.find((candidate) => candidate.ID === allocId);
    const status = allocation?.DeploymentStatus;
    if (allocation !== undefined && typeof status?.Healthy === 'boolean' && typeof status.Timestamp === 'string') {
      const events: Record<string, string> = {};
      for (const [task, state] of Object.entries(allocation.TaskStates ?? {})) {
        const event = (state.Events ?? []).findLast((candidate) => candidate.Type === 'Alloc Unhealthy');
        if (event !== undefined) events[task] = String(event.DisplayMessage || event.Message || '');
      }
      return { allocId, healthy: status.Healthy, at: Date.parse(status.Timestamp), events, seenAt };
    }
    index = Math.max(index, meta.lastIndex);
  }
}

/** One line of `warden watch --json`, with the wall time it was written. */
export interface WatchLine {
  readonly line: Record<string, unknown>;
  readonly writtenAt: number;
}

/** Warden's verdict on an allocation, as `warden watch --json` printed it. */
export interface WardenVerdict {
  readonly verdict: string;
  /** The verdict's time, epoch ms. */
  readonly at: number;
  readonly reasons: Readonly<Record<string, string>>;
  /** Wall time the line was printed. */
  readonly printedAt: number;
}

/**
 * `warden watch --json -p <prefix>` against the live agents, recorded to `recording` as `warden
 * record` does, its lines kept with the wall time each was written.
 */
export class LiveWatch {
  readonly lines: WatchLine[] = [];
  private readonly listeners = new Set<() => void>();
  private readonly stop = new AbortController();
  private readonly done: Promise<number>;

  constructor(prefix: string, recording: string) {
    const io = {
      env: liveEnv(),
      write: (text: string) => this.push(text),
      error: (text: string) => this.push(text),
      signal: this.stop.signal,
    };
    this.done = withRecording(recording, { name: 'watch', options: { jobPrefix: [prefix] } }, io, (recordingIo) => watch({ jobPrefix: [prefix], json: true }, recordingIo));
  }

  private push(text: string): void {
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text) as Record<string, unknown>;
    } catch {
      line = { type: 'text', text };
    }
    this.lines.push({ line, writtenAt: systemClock.now() });
    for (const listener of [...this.listeners]) listener();
  }

  /** Resolves with the first line `match` accepts (already written or to come); rejects after `timeoutMs`. */
  until(what: string, match: (line: Record<string, unknown>) => boolean, timeoutMs: number): Promise<WatchLine> {
    return new Promise((resolve, reject) => {
      const found = (): WatchLine | undefined => this.lines.find((entry) => match(entry.line));
      const listener = (): void => {
        const entry = found();
        if (entry === undefined) return;
        this.listeners.delete(listener);
        clearTimeout(timer);
        resolve(entry);
      };
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error(`warden watch printed no ${what} within ${timeoutMs} ms; its lines: ${JSON.stringify(this.lines.map((entry) => entry.line)).slice(-3_000)}`));
      }, timeoutMs);
      this.listeners.add(listener);
      listener();
    });
  }

  /** Once the watch follows the event stream. */
  streaming(timeoutMs = 30_000): Promise<WatchLine> {
    return this.until('streaming', (line) => line.type === 'connection' && line.state === 'streaming', timeoutMs);
  }

  async verdict(allocId: string, timeoutMs: number): Promise<WardenVerdict> {
    const { line, writtenAt } = await this.until(`verdict on ${allocId}`, (candidate) => candidate.type === 'verdict' && candidate.allocId === allocId, timeoutMs);
    return { verdict: String(line.verdict), at: Date.parse(String(line.time)), reasons: (line.reasons ?? {}) as Record<string, string>, printedAt: writtenAt };
  }

  /** Stops the watch and closes its recording; resolves to its exit code. */
  close(): Promise<number> {
    this.stop.abort();
    return this.done;
  }
}
