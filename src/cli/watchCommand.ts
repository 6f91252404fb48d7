import type { Command } from 'commander';
import { systemClock } from '../clock/index.js';
import { NomadClient } from '../nomad/client.js';
import { nomadConfigFromEnv } from '../nomad/config.js';
import { createSupervisor } from '../supervisor/index.js';
import { changeJson, describeChange, describeVerdict, formatTime, paint, verdictJson } from '../supervisor/describe.js';
import type { ConnectionState } from '../supervisor/types.js';
import type { JobShard } from '../intake/scope.js';
import { startInspector } from '../inspect/inspector.js';
import { startMetricsEndpoint } from './metricsEndpoint.js';
import type { ListenAddress } from '../metrics/server.js';
import { processIo, type CommandIo } from './commandIo.js';
import { consulClientFor } from './consulClientFor.js';
import { EXIT_UNREACHABLE } from './exitCodes.js';
import { withoutCredentials } from '../secrets.js';
import { processLogger } from './logging.js';

/**
 * `warden watch`: follows the cluster at NOMAD_ADDR (the Nomad CLI's variables and defaults) for a
 * scope and prints each allocation's state changes and verdicts, one line each, with the reasons;
 * `--json` prints one JSON object a line; problems go to stderr. Runs until interrupted (Ctrl-C or
 * SIGTERM: exit 0, its normal end); exit code 2 when the event stream gives up (a permanent error
 * such as a refused token).
 */

export interface WatchOptions {
  /** Namespaces to watch; default the environment's NOMAD_NAMESPACE, else "default". */
  namespace?: string[];
  jobPrefix?: string[];
  /** Exact job ids: Nomad then sends only their events. */
  job?: string[];
  /** Judge only the jobs of this shard (`--shard i/n`). */
  shard?: JobShard;
  json?: boolean;
  /** Serve the inspector on this port (0: any free one, printed). */
  inspect?: number;
  /** Serve Prometheus metrics at http://<address>/metrics. */
  metrics?: ListenAddress;
}


const CONNECTION_WORDS: Record<ConnectionState, string> = {
  connecting: 'connecting',
  streaming: 'streaming events',
  resyncing: 'listing allocations (resync)',
  backingOff: 'connection lost, retrying',
  stopped: 'stopped',
};

export async function watch(options: WatchOptions, io: CommandIo): Promise<number> {
  const config = nomadConfigFromEnv(io.env);
  const clock = io.clock ?? systemClock;
  const consul = consulClientFor(io, clock);
  const style = { color: io.color ?? false };
  // First: a port in use fails the command before anything else is opened.
  const metrics = options.metrics === undefined ? undefined : await startMetricsEndpoint(options.metrics, clock);
  const inspector =
    options.inspect === undefined ? undefined : await startInspector({ clock, port: options.inspect, secrets: [config.token, consul?.config.token] }).catch(async (error: unknown) => {
      await metrics?.close();
      throw error;
    });
  const nomad = new NomadClient(config, { ...io.transport, clock });
  const namespaces = options.namespace ?? (config.namespace === undefined ? undefined : [config.namespace]);
  const supervisor = createSupervisor({
    nomad,
    clock,
    ...(inspector ? { inspect: inspector.inspect } : {}),
    ...(consul ? { consul } : {}),
    ...(io.logger ? { logger: io.logger } : {}),
    ...(io.random ? { random: io.random } : {}),
    ...(metrics ? { streamMonitor: metrics.streamMonitor } : {}),
    scope: {
      ...(namespaces ? { namespaces } : {}),
      ...(options.jobPrefix ? { jobPrefixes: options.jobPrefix } : {}),
      ...(options.job ? { jobs: options.job } : {}),
      ...(options.shard ? { shard: options.shard } : {}),
    },
  });
  inspector?.attach(supervisor);
  metrics?.observe(supervisor);
  const line = (human: string, json: object, write = io.write): void => write(options.json ? JSON.stringify(json) : human);
  if (inspector) line(`${paint('inspector', 'note', style)} ${inspector.url}`, { type: 'inspector', url: inspector.url });
  if (metrics) line(`${paint('metrics', 'note', style)} ${metrics.url}`, { type: 'metrics', url: metrics.url });
  let exitCode = 0;
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  supervisor.connection$.subscribe((state) => {
    line(`${paint(formatTime(clock.now()), 'dim', style)}  ${paint(`[${CONNECTION_WORDS[state]}]`, 'note', style)} ${withoutCredentials(config.address)}`, {
      type: 'connection',
      time: formatTime(clock.now()),
      state,
    });
  });
  supervisor.changes$.subscribe((change) => io.write(options.json ? changeJson(change) : describeChange(change, style)));
  supervisor.verdicts$.subscribe((record) => io.write(options.json ? verdictJson(record) : describeVerdict(record, style)));
  supervisor.problems$.subscribe((problem) => {
    // Problems are errors: stderr.
    line(`${paint(formatTime(clock.now()), 'dim', style)}  ${paint('problem', 'bad', style)} ${problem.message}`, { type: 'problem', time: formatTime(clock.now()), ...problem }, io.error ?? io.write);
    if (problem.kind === 'stream-failed') {
      exitCode = EXIT_UNREACHABLE;
      finish();
    }
  });
  io.signal?.addEventListener('abort', () => finish(), { once: true });
  if (io.signal?.aborted) finish();
  await finished;
  await supervisor.stop();
  await inspector?.close();
  await metrics?.close();
  await consul?.close();
  await nomad.close();
  return exitCode;
}

/** `warden watch` run from the command line (its options as commandLine/watch.ts parses them). */
export async function watchAction(options: Omit<WatchOptions, 'inspect' | 'metrics'> & { inspect?: number | true; metrics?: ListenAddress | true }, command: Command): Promise<void> {
  const { inspect, metrics, ...rest } = options;
  process.exitCode = await watch(
    {
      ...rest,
      ...(inspect === undefined ? {} : { inspect: inspect === true ? 0 : inspect }),
      ...(metrics === undefined ? {} : { metrics: metrics === true ? { host: '127.0.0.1', port: 0 } : metrics }),
    },
    { ...processIo(), logger: processLogger(command, systemClock) },
  );
}
