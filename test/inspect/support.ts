/**
 * An inspected supervisor over FakeNomad on one VirtualClock, and a WebSocket client of the
 * inspector that can stop reading (its socket paused) to play a slow browser.
 */
import { connect, type Socket } from 'node:net';
import { WebSocket } from 'ws';
import { VirtualClock } from '../../src/clock/index.js';
import { NomadClient } from '../../src/nomad/client.js';
import { createSupervisor } from '../../src/supervisor/index.js';
import type { Supervisor } from '../../src/supervisor/supervisor.js';
import type { VerdictRecord } from '../../src/supervisor/types.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { apply, emptyState } from '../../src/inspect/browser/store.js';
import { InspectionModel, InspectorServer, type AllocationInfo, type InspectorServerOptions, type InspectorSnapshot, type LiveMessage } from '../../src/inspect/index.js';
import { flush } from '../supervisor/support/harness.js';

export interface Inspected {
  clock: VirtualClock;
  fake: FakeNomad;
  supervisor: Supervisor;
  model: InspectionModel;
  server: InspectorServer;
  verdicts: VerdictRecord[];
  close(): Promise<void>;
}

export async function startInspected(
  start: number,
  options: { token?: string; finishedLimit?: number; timelineLimit?: number; inspectHook?: boolean; server?: Omit<InspectorServerOptions, 'model'> } = {},
): Promise<Inspected> {
  const clock = new VirtualClock({ start });
  const fake = await FakeNomad.start({ clock, ...(options.token ? { token: options.token } : {}) });
  const nomad = new NomadClient({ address: fake.address, ...(options.token ? { token: options.token } : {}) }, { clock, gzip: false });
  // No secrets given: what the inspector serves must be free of the token by construction.
  const model = new InspectionModel({
    clock,
    ...(options.finishedLimit ? { finishedLimit: options.finishedLimit } : {}),
    ...(options.timelineLimit === undefined ? {} : { timelineLimit: options.timelineLimit }),
  });
  const supervisor = createSupervisor({ nomad, clock, ...(options.inspectHook === false ? {} : { inspect: model.inspect }) });
  const detach = model.attach(supervisor);
  const server = await InspectorServer.start({ model, ...options.server });
  const verdicts: VerdictRecord[] = [];
  supervisor.verdicts$.subscribe((record) => verdicts.push(record));
  for (let i = 0; i < 50 && model.snapshot().connection.state !== 'streaming'; i++) await flush();
  return {
    clock,
    fake,
    supervisor,
    model,
    server,
    verdicts,
    close: async () => {
      await server.close();
      detach();
      await supervisor.stop();
      await nomad.close();
      await fake.close();
    },
  };
}

export async function get(url: string, path: string): Promise<{ status: number; headers: Headers; body: string }> {
  const response = await fetch(new URL(path, url));
  return { status: response.status, headers: response.headers, body: await response.text() };
}

export async function fetchSnapshot(url: string): Promise<InspectorSnapshot> {
  return JSON.parse((await get(url, '/api/snapshot')).body) as InspectorSnapshot;
}

/** Lets sockets run (the virtual clock stands still) until `done` holds. */
export async function until(done: () => boolean, turns = 200): Promise<void> {
  for (let i = 0; i < turns && !done(); i++) await flush();
  if (!done()) throw new Error('condition not reached');
}

export interface LiveClient {
  /** Every message received, as text. */
  readonly texts: string[];
  readonly messages: { type: string; [key: string]: unknown }[];
  send(message: unknown): void;
  pause(): void;
  resume(): void;
  close(): void;
}

export async function openLive(url: string): Promise<LiveClient> {
  let raw: Socket | undefined;
  const socket = new WebSocket(new URL('/api/live', url.replace(/^http/, 'ws')), {
    createConnection: (options: { host?: string | null; port?: string | number | null }) => {
      raw = connect({ host: options.host ?? '127.0.0.1', port: Number(options.port) });
      return raw;
    },
  });
  const texts: string[] = [];
  const messages: LiveClient['messages'] = [];
  socket.on('message', (data: Buffer) => {
    const text = data.toString('utf8');
    texts.push(text);
    messages.push(JSON.parse(text) as LiveClient['messages'][number]);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return {
    texts,
    messages,
    send: (message) => socket.send(typeof message === 'string' ? message : JSON.stringify(message)),
    pause: () => raw?.pause(),
    resume: () => raw?.resume(),
    close: () => socket.terminate(),
  };
}

/** The allocations a page knows after applying the messages in order: the page's own store. */
export function rebuild(messages: LiveClient['messages']): Map<string, AllocationInfo> {
  const state = emptyState();
  for (const message of messages) apply(state, message as unknown as LiveMessage);
  return state.allocations;
}

export function byId(snapshot: InspectorSnapshot): Map<string, AllocationInfo> {
  return new Map(snapshot.allocations.map((a) => [a.id, a]));
}
