import { request } from 'undici';
import type { FakeNomad } from '../../src/testing/fakeNomad.js';

export interface OpenStream {
  readonly lines: string[];
  /** Bytes after the last newline. */
  readonly rest: string;
  readonly ended: boolean;
  readonly failed: unknown;
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  dataLines(): { Index: number; Events: { Topic: string; Type: string; Key: string; FilterKeys: string[] | null }[] }[];
  close(): void;
}

/** Reads an event stream into lines while the test drives the clock. */
export async function openStream(fake: FakeNomad, query = '', headers: Record<string, string> = {}): Promise<OpenStream> {
  const response = await request(`${fake.address}/v1/event/stream${query}`, { headers });
  const state = { lines: [] as string[], rest: '', ended: false, failed: undefined as unknown };
  void (async () => {
    try {
      for await (const chunk of response.body) {
        const parts = (state.rest + (chunk as Buffer).toString()).split('\n');
        state.rest = parts.pop()!;
        state.lines.push(...parts);
      }
      state.ended = true;
    } catch (error) {
      state.failed = error;
    }
  })();
  return {
    get lines() { return state.lines; },
    get rest() { return state.rest; },
    get ended() { return state.ended; },
    get failed() { return state.failed; },
    status: response.statusCode,
    headers: response.headers,
    dataLines: () => state.lines.filter((l) => l !== '{}').map((l) => JSON.parse(l) as ReturnType<OpenStream['dataLines']>[number]),
    close: () => response.body.destroy(),
  };
}
