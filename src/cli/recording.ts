import { systemClock, type VirtualClock } from '../clock/index.js';
import { consulConfigWhenSet } from '../consul/config.js';
import { nomadConfigFromEnv } from '../nomad/config.js';
import { driveReplay } from '../nomad/recording/drive.js';
import type { RecordingHeader, TrafficRecording } from '../nomad/recording/format.js';
import { recordToFile } from '../nomad/recording/recorder.js';
import { ReplayWire } from '../nomad/recording/replayWire.js';
import type { WireLayer } from '../nomad/wire.js';
import { paint } from '../supervisor/describe.js';
import type { CommandIo } from './commandIo.js';
import type { GateOptions } from './gateCommand.js';
import type { WatchOptions } from './watchCommand.js';

/**
 * Recording and replaying commands. `warden record <file>` follows the cluster as `warden watch` does while writing down everything
 * Warden reads (src/nomad/recording); `warden replay <file>` runs the recorded command again over
 * the recording on a VirtualClock that starts at the recording's time, and reaches the same
 * verdicts at the same times, every time; `warden gate --record` / `--replay` do the same for a
 * deploy gate. A real incident recorded this way becomes a test.
 */

/** The recorded command: which one, with the options a replay runs it with again. */
export type RecordedCommand = { name: 'watch'; options: Pick<WatchOptions, 'namespace' | 'jobPrefix' | 'job' | 'shard'> } | { name: 'gate'; options: GateOptions & { jobId: string } };

/** NOMAD_* / CONSUL_* settings a replay needs to ask the same questions: addresses, namespaces, region; never a token or a file. */
function recordedEnv(io: CommandIo): Record<string, string> {
  const nomad = nomadConfigFromEnv(io.env);
  const consul = consulConfigWhenSet(io.env);
  const entries: [string, string | undefined][] = [
    ['NOMAD_ADDR', nomad.address],
    ['NOMAD_NAMESPACE', nomad.namespace],
    ['NOMAD_REGION', nomad.region],
    ['CONSUL_HTTP_ADDR', consul?.address],
    ['CONSUL_NAMESPACE', consul?.namespace],
  ];
  return Object.fromEntries(entries.filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/** The wire of `io` with `layer` over it (a test's own wire stays underneath). */
function layered(io: CommandIo, layer: WireLayer): CommandIo {
  const below = io.transport?.wire;
  return { ...io, transport: { ...io.transport, wire: below === undefined ? layer : (network) => layer(below(network)) } };
}

/** Runs `command` with everything it reads written to `file`. */
export async function withRecording(file: string, command: RecordedCommand, io: CommandIo, run: (io: CommandIo) => Promise<number>): Promise<number> {
  const clock = io.clock ?? systemClock;
  const nomad = nomadConfigFromEnv(io.env);
  const consul = consulConfigWhenSet(io.env);
  const { recorder, close } = recordToFile(file, {
    clock,
    command: command as RecordingHeader['command'],
    env: recordedEnv(io),
    secrets: [nomad.token, consul?.token],
  });
  try {
    return await run({ ...layered(io, recorder.layer), random: recorder.random });
  } finally {
    await close();
  }
}

/** Virtual time a replayed command gets to finish once stopped. */
const STOP_GRACE_MS = 60_000;

export interface ReplayRun {
  /** The replay's clock, from the recording's start (give it to the command's logger). */
  readonly clock: VirtualClock;
  /** Drive the clock this far (default: the recording's end). */
  readonly until?: number;
  /** Recorded pace × this (default: as fast as possible). */
  readonly speed?: number;
}

/**
 * Runs `run` over `recording` instead of a cluster: the recorded settings, the recording under the
 * transports, the clock driven to the recording's end (or until the command is done). Reports what
 * the command asked that the recording did not have.
 */
export async function replayRecording(recording: TrafficRecording, replay: ReplayRun, io: CommandIo, run: (io: CommandIo) => Promise<number>): Promise<number> {
  const { clock } = replay;
  const wire = new ReplayWire(recording, clock);
  const stop = new AbortController();
  io.signal?.addEventListener('abort', () => stop.abort(), { once: true });
  let finished = false;
  const running = run({ ...io, env: recording.header.env, clock, transport: { wire: wire.layer }, random: wire.random, signal: stop.signal }).finally(() => {
    finished = true;
  });
  await driveReplay(clock, replay.until ?? recording.endsAt, { done: () => finished, ...(replay.speed === undefined ? {} : { speed: replay.speed }) });
  stop.abort();
  // Stopping may still take a step of the clock (a close grace, a last answer).
  await driveReplay(clock, clock.now() + STOP_GRACE_MS, { done: () => finished });
  const code = await running;
  if (wire.misses.length > 0) {
    const [first] = wire.misses;
    const text = `${wire.misses.length} request(s) had no answer in the recording (first: ${first})`;
    // On stderr: stdout is the command's own output (one JSON object a line with --json).
    (io.error ?? io.write)(`${paint('note', 'note', { color: io.color ?? false })} ${text}`);
  }
  return code;
}
