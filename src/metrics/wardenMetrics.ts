/**
 * The supervisor's Prometheus metrics (prom-client), on a registry of their own so that a server
 * command can add its metrics beside them and serve one page. Nearly everything is derived from
 * what a supervisor shows anyone: verdicts$, changes$ (through its supervised allocations),
 * problems$, connection$ and its actor's evaluation and exec session children. Two things are not
 * shown there and come from small hooks: the event stream's batches and states (the
 * EventStreamMonitor handed to createSupervisor as `streamMonitor`) and exec bytes (a diagnostics
 * channel, so they count every exec session of the process).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Observable, Subscription } from 'rxjs';
import type { AnyActorRef } from 'xstate';
import type { EvaluationOutcome } from '../../machines/evaluationOutcome.js';
import type { ExecSessionOutcome } from '../../machines/execSession.js';
import { evaluationActorId, execActorId } from '../../machines/supervisor.js';
import type { AllocationHealthState } from '../../machines/allocationHealth.js';
import { systemClock, type Clock } from '../clock/index.js';
import { nanoTimeToMs, isNanoTime } from '../health/nomadTime.js';
import type { EventBatch, StreamState } from '../nomad/eventStream.js';
import { EXEC_BYTES_CHANNEL, type ExecBytesMessage } from '../nomad/exec/bytesChannel.js';
import type { NomadEvent } from '../nomad/types.js';
import type { EventStreamMonitor } from '../supervisor/nomadSource.js';
import type { Supervisor } from '../supervisor/supervisor.js';
import type { ConnectionState, VerdictRecord } from '../supervisor/types.js';

export interface WardenMetricsOptions {
  /** The clock verdict and stream lag are measured on (the supervisor's). Default: the system clock. */
  clock?: Clock;
  /** A registry to add to (a server's own); default: a new one. */
  registry?: Registry;
  /** Node.js process metrics (heap, event loop lag, GC, CPU, file descriptors). Default true. */
  processMetrics?: boolean;
}

const CONNECTION_STATES: readonly ConnectionState[] = ['connecting', 'streaming', 'resyncing', 'backingOff', 'stopped'];
/** The states an allocation is judged in (a final one ends its machine); each reported, 0 when empty. */
const JUDGING_STATES: readonly AllocationHealthState[] = ['pending', 'running', 'minHealthyWait'];
const LAG_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

function outcomeLabel(record: VerdictRecord): 'healthy' | 'unhealthy' | 'stopped' | 'undetermined' {
  const { outcome } = record;
  if ('stopped' in outcome) return 'stopped';
  if ('undetermined' in outcome) return 'undetermined';
  return outcome.healthy ? 'healthy' : 'unhealthy';
}

function evaluationLabel(outcome: EvaluationOutcome): string {
  if (outcome.ok) return 'complete';
  return outcome.failures.length > 0 ? 'placement-failed' : outcome.status;
}

/** The server's write time of an event's object (allocations and evaluations carry one), in ms. */
function writtenAt(event: NomadEvent): number | undefined {
  const payload = event.Payload as { Allocation?: { ModifyTime?: unknown }; Evaluation?: { ModifyTime?: unknown } };
  const time = payload.Allocation?.ModifyTime ?? payload.Evaluation?.ModifyTime;
  return isNanoTime(time) ? nanoTimeToMs(time) : undefined;
}

export class WardenMetrics {
  readonly registry: Registry;
  /** Pass to createSupervisor as `streamMonitor`: the event stream's batches and states. */
  readonly streamMonitor: EventStreamMonitor;
  private readonly clock: Clock;
  private readonly supervisors = new Set<Supervisor>();
  private readonly verdicts: Counter<'outcome'>;
  private readonly verdictLag: Histogram<'outcome'>;
  private readonly connection: Gauge<'state'>;
  private readonly reconnects: Counter;
  private readonly resyncs: Counter;
  private readonly streamLag: Histogram;
  private readonly streamIndex: Gauge;
  private readonly events: Counter<'topic'>;
  private readonly skipped: Counter<'what'>;
  private readonly problems: Counter<'kind'>;
  private readonly evaluations: Counter<'outcome'>;
  private readonly execSessions: Counter<'outcome'>;
  private readonly execBytes: Counter<'stream'>;
  private readonly onExecBytes = (message: unknown): void => {
    const { stream, bytes } = message as ExecBytesMessage;
    this.execBytes.inc({ stream }, bytes);
  };

  constructor(options: WardenMetricsOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.registry = options.registry ?? new Registry();
    const registers = [this.registry];
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    const supervisors = this.supervisors;
    new Gauge({
      name: 'warden_allocations_supervised',
      help: 'Allocations being judged now, by the state of their health machine',
      labelNames: ['state'],
      registers,
      collect() {
        const counts = new Map<string, number>(JUDGING_STATES.map((state) => [state, 0]));
        for (const supervisor of supervisors) {
          for (const allocation of supervisor.supervisedAllocations()) counts.set(allocation.state, (counts.get(allocation.state) ?? 0) + 1);
        }
        for (const [state, count] of counts) this.set({ state }, count);
      },
    });
    this.verdicts = new Counter({ name: 'warden_verdicts_total', help: 'Allocation outcomes reached: healthy, unhealthy, stopped (not judged)', labelNames: ['outcome'], registers });
    this.verdictLag = new Histogram({
      name: 'warden_verdict_lag_seconds',
      help: "Time from the verdict's time in the data (latest start + min_healthy_time, a task's failure, the deadline) to Warden's verdict",
      labelNames: ['outcome'],
      buckets: LAG_BUCKETS,
      registers,
    });
    this.connection = new Gauge({ name: 'warden_event_stream_connection', help: 'The event stream connection state (1 for the current one)', labelNames: ['state'], registers });
    this.reconnects = new Counter({ name: 'warden_event_stream_reconnects_total', help: 'Event stream connection attempts after a failed or lost one', registers });
    this.resyncs = new Counter({ name: 'warden_event_stream_resyncs_total', help: 'Allocation listings after a (re)connection (list, then watch)', registers });
    this.streamLag = new Histogram({
      name: 'warden_event_stream_lag_seconds',
      help: "Time from the server's write of a batch's newest allocation or evaluation to its arrival here",
      buckets: LAG_BUCKETS,
      registers,
    });
    this.streamIndex = new Gauge({ name: 'warden_event_stream_index', help: 'Raft index of the newest event stream batch received', registers });
    this.events = new Counter({ name: 'warden_event_stream_events_total', help: 'Events received, by topic (resync listings as Allocation)', labelNames: ['topic'], registers });
    this.skipped = new Counter({ name: 'warden_event_stream_skipped_total', help: 'Undecodable input skipped: whole event stream batches, events of a batch, allocations of a listing', labelNames: ['what'], registers });
    this.problems = new Counter({ name: 'warden_problems_total', help: 'Problems the supervisor reported and skipped, by kind', labelNames: ['kind'], registers });
    this.childGauge('warden_evaluations_monitored', 'Evaluations being followed now (child actors)', 'evaluations');
    this.evaluations = new Counter({ name: 'warden_evaluations_total', help: 'Evaluations followed to their end, by outcome', labelNames: ['outcome'], registers });
    this.childGauge('warden_exec_sessions_active', 'Exec sessions running now (child actors)', 'execSessions');
    this.execSessions = new Counter({ name: 'warden_exec_sessions_total', help: 'Exec sessions ended, by outcome: exited, failed, cancelled', labelNames: ['outcome'], registers });
    this.execBytes = new Counter({ name: 'warden_exec_bytes_total', help: 'Bytes through exec sessions of this process, by stream', labelNames: ['stream'], registers });
    for (const stream of ['stdin', 'stdout', 'stderr'] as const) this.execBytes.inc({ stream }, 0);
    subscribe(EXEC_BYTES_CHANNEL, this.onExecBytes);
    const streamStates = new Map<string, StreamState['status']>();
    this.streamMonitor = {
      batch: (batch) => this.onBatch(batch),
      state: (state, namespace) => {
        const previous = streamStates.get(namespace);
        streamStates.set(namespace, state.status);
        if (state.status === previous) return;
        if (state.status === 'connecting' && previous === 'backingOff') this.reconnects.inc();
        if (state.status === 'resyncing') this.resyncs.inc();
      },
    };
  }

  /** Counts what `supervisor` does from now on, until the returned function is called or it stops. */
  observe(supervisor: Supervisor): () => void {
    this.supervisors.add(supervisor);
    const subscriptions: Subscription[] = [
      supervisor.verdicts$.subscribe((record) => this.onVerdict(record)),
      supervisor.problems$.subscribe((problem) => this.problems.inc({ kind: problem.kind })),
      supervisor.connection$.subscribe((state) => {
        for (const each of CONNECTION_STATES) this.connection.set({ state: each }, each === state ? 1 : 0);
      }),
    ];
    const followed = new Set<string>();
    const follow = (actorId: string, ended: (output: unknown) => void): void => {
      if (followed.has(actorId)) return;
      const child = supervisor.actor.system.get(actorId) as AnyActorRef | undefined;
      if (child === undefined) return;
      followed.add(actorId);
      // A child stopped with the supervisor completes without an output: nothing to count.
      child.subscribe({
        complete: () => {
          followed.delete(actorId);
          const { output } = child.getSnapshot() as { output?: unknown };
          if (output !== undefined) ended(output);
        },
        error: () => followed.delete(actorId),
      });
    };
    const children = supervisor.actor.subscribe((snapshot) => {
      for (const id of snapshot.context.evaluations) follow(evaluationActorId(id), (output) => this.evaluations.inc({ outcome: evaluationLabel(output as EvaluationOutcome) }));
      for (const id of snapshot.context.execSessions) follow(execActorId(id), (output) => this.execSessions.inc({ outcome: (output as ExecSessionOutcome).status }));
    });
    const stop = (): void => {
      for (const subscription of subscriptions) subscription.unsubscribe();
      children.unsubscribe();
      this.supervisors.delete(supervisor);
    };
    subscriptions.push(supervisor.verdicts$.subscribe({ complete: stop }));
    return stop;
  }

  /** Counts evaluations followed outside the supervisor's children (the runner pools' evaluations$) in warden_evaluations_total. */
  countEvaluations(outcomes: Observable<EvaluationOutcome>): Subscription {
    return outcomes.subscribe((outcome) => this.evaluations.inc({ outcome: evaluationLabel(outcome) }));
  }

  /** The text exposition of every metric of the registry: what GET /metrics answers. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /** Stops listening for exec bytes; the registry keeps its values. */
  close(): void {
    unsubscribe(EXEC_BYTES_CHANNEL, this.onExecBytes);
  }

  /** A gauge of the supervisors' child actors of one kind, counted at each scrape. */
  private childGauge(name: string, help: string, children: 'evaluations' | 'execSessions'): void {
    const supervisors = this.supervisors;
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set([...supervisors].reduce((sum, supervisor) => sum + supervisor.actor.getSnapshot().context[children].length, 0));
      },
    });
  }

  private onVerdict(record: VerdictRecord): void {
    const outcome = outcomeLabel(record);
    this.verdicts.inc({ outcome });
    this.verdictLag.observe({ outcome }, Math.max(0, this.clock.now() - record.outcome.at) / 1000);
  }

  private onBatch(batch: EventBatch): void {
    this.streamIndex.set(batch.index);
    const { skipped } = batch;
    // A whole line that did not decode is one skip without a position; a listing's are allocations.
    if (skipped !== undefined) this.skipped.inc({ what: batch.resync ? 'listing' : skipped.examples[0]?.position === undefined ? 'batch' : 'event' }, skipped.count);
    let newest: number | undefined;
    for (const event of batch.events) {
      this.events.inc({ topic: event.Topic });
      const at = writtenAt(event);
      if (at !== undefined && (newest === undefined || at > newest)) newest = at;
    }
    // A listing after a reconnect is no measure of the stream's delay.
    if (!batch.resync && newest !== undefined) this.streamLag.observe(Math.max(0, this.clock.now() - newest) / 1000);
  }
}
