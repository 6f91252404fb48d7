import type { Command } from 'commander';
import { VirtualClock, systemClock, type Clock } from '../clock/index.js';
import { readTrafficRecording } from '../nomad/recording/format.js';
import { replayRecording, withRecording } from './recording.js';
import { NomadClient } from '../nomad/client.js';
import { nomadConfigFromEnv } from '../nomad/config.js';
import { NomadConnectionError, NomadTimeoutError } from '../nomad/errors.js';
import { createSupervisor, type DeploymentResult } from '../supervisor/index.js';
import { deploymentRecord, describeDeployment, paint } from '../supervisor/describe.js';
import { DEFAULT_TIMEOUT_S } from './commandLine/gate.js';
import { interruptedExitCode, processIo, type CommandIo } from './commandIo.js';
import { consulClientFor } from './consulClientFor.js';
import { EXIT_UNREACHABLE } from './exitCodes.js';
import { processLogger } from './logging.js';
import { errorMessage } from '../errorMessage.js';
import { withoutCredentials } from '../secrets.js';

/**
 * `warden gate <job> [--version N] [--fail-fast]`: a deploy gate for CI/CD. Waits for the job
 * version's deployment to end as Nomad ends it (its own status has the final word: a gate never
 * contradicts it), with Warden's verdicts of its allocations for the reasons, and exits 0 when
 * successful; 1 with the reasons when not (failed or cancelled, in Nomad's words, each allocation
 * Warden judged unhealthy with its per-task reasons; --fail-fast: the first unhealthy allocation or
 * a group that cannot be placed; an unknown job; no answer within --timeout); 2 when Nomad could not
 * be reached; 3 when Nomad counts every canary healthy and the deployment waits for a manual
 * promotion; 130 (143) when Ctrl-C (SIGTERM) ended the wait. Errors go to stderr.
 */

export interface GateOptions {
  version?: number;
  namespace?: string;
  /** Give up after this many seconds (default 900). */
  timeout?: number;
  json?: boolean;
  /** Fail at the first unhealthy allocation (or unplaceable group) instead of waiting for Nomad to end the deployment. */
  failFast?: boolean;
}

export const GATE_HEALTHY = 0;
export const GATE_UNHEALTHY = 1;
export const GATE_UNREACHABLE = EXIT_UNREACHABLE;
export const GATE_AWAITING_PROMOTION = 3;

function isUnreachable(error: unknown): boolean {
  return error instanceof NomadConnectionError || error instanceof NomadTimeoutError;
}

export async function gate(jobId: string, options: GateOptions, io: CommandIo): Promise<number> {
  const config = nomadConfigFromEnv(io.env, options.namespace ? { namespace: options.namespace } : {});
  const clock = io.clock ?? systemClock;
  const style = { color: io.color ?? false };
  const namespace = config.namespace ?? 'default';
  const say = (lines: string[], json: object, write = io.write): void => {
    if (options.json) write(JSON.stringify(json));
    else for (const text of lines) write(text);
  };
  const sayError = (lines: string[], json: object): void => say(lines, json, io.error ?? io.write);
  const nomad = new NomadClient(config, { ...io.transport, clock });
  const consul = consulClientFor(io, clock);
    const supervisor = createSupervisor({
    nomad,
    clock,
    // Its own job's events only, filtered by Nomad: a gate in a busy cluster reads no one else's.
    scope: { namespaces: [namespace], jobs: [jobId] },
    ...(consul ? { consul } : {}),
    ...(io.logger ? { logger: io.logger } : {}),
    ...(io.random ? { random: io.random } : {}),
  });
  let timer: unknown;
  try {
    // Reading the job first tells an unreachable Nomad (2) from an unknown job (1), and gives the version.
    const job = (await nomad.getJob(jobId, { namespace })).body;
    const version = options.version ?? job.Version ?? 0;
    const timeoutS = options.timeout ?? DEFAULT_TIMEOUT_S;
    const outcome = await new Promise<DeploymentResult | 'timeout' | 'interrupted'>((resolve, reject) => {
      timer = clock.setTimeout(() => resolve('timeout'), timeoutS * 1000);
      io.signal?.addEventListener('abort', () => resolve('interrupted'), { once: true });
      supervisor.waitForDeployment(jobId, { version, namespace, failFast: options.failFast ?? false }).then(resolve, reject);
    });
    if (outcome === 'timeout' || outcome === 'interrupted') {
      const waitingFor = supervisor.deploymentWaits().find((wait) => wait.jobId === jobId)?.waitingFor;
      const reason = outcome === 'timeout' ? `no verdict within ${timeoutS}s${waitingFor ? `: ${waitingFor}` : ''}` : 'interrupted';
      say([`${paint('✘', 'bad', style)} ${jobId} version ${version}: ${reason}`], { type: 'deployment', ok: false, jobId, version, reason });
      return outcome === 'interrupted' ? interruptedExitCode(io.signal) : GATE_UNHEALTHY;
    }
    say(describeDeployment(outcome, style), deploymentRecord(outcome));
    if (!outcome.ok) return GATE_UNHEALTHY;
    return outcome.awaitingPromotion ? GATE_AWAITING_PROMOTION : GATE_HEALTHY;
  } catch (error) {
    const message = errorMessage(error);
    if (isUnreachable(error)) {
      sayError([`${paint('✘', 'bad', style)} Nomad at ${withoutCredentials(config.address)} could not be reached: ${message}`], { type: 'error', unreachable: true, message });
      return GATE_UNREACHABLE;
    }
    sayError([`${paint('✘', 'bad', style)} ${jobId}: ${message}`], { type: 'error', unreachable: false, message });
    return GATE_UNHEALTHY;
  } finally {
    if (timer !== undefined) clock.clearTimeout(timer);
    await supervisor.stop();
    await consul?.close();
    await nomad.close();
  }
}


/** `warden gate` run from the command line (its options as commandLine/gate.ts parses them). */
export async function gateAction(jobId: string, options: GateOptions & { record?: string; replay?: string }, command: Command): Promise<void> {
  const { record, replay, ...gateOptions } = options;
  const io = processIo();
  if (replay !== undefined) {
    process.exitCode = await replayGate(replay, jobId, gateOptions, io, (clock) => processLogger(command, clock));
    return;
  }
  const run = (commandIo: CommandIo): Promise<number> => gate(jobId, gateOptions, commandIo);
  const live = { ...io, logger: processLogger(command, systemClock) };
  process.exitCode = record === undefined ? await run(live) : await withRecording(record, { name: 'gate', options: { ...gateOptions, jobId } }, live, run);
}

/**
 * `warden gate <job> --replay <file>`: the gate over a recording (of a gate, or of a watch that saw the
 * job). No verdict by the recording's end is a gate that timed out there.
 */
export async function replayGate(file: string, jobId: string, options: GateOptions, io: Omit<CommandIo, 'clock'>, logger?: (clock: Clock) => CommandIo['logger']): Promise<number> {
  const recording = readTrafficRecording(file);
  const clock = new VirtualClock({ start: recording.header.start });
  const timeout = options.timeout ?? Math.ceil((recording.endsAt - recording.header.start) / 1000);
  const replayIo = { ...io, ...(logger ? { logger: logger(clock) } : {}) };
  return replayRecording(recording, { clock, until: recording.header.start + timeout * 1000 + 1 }, replayIo, (commandIo) => gate(jobId, { ...options, timeout }, commandIo));
}
