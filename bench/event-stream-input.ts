/** Input of bench/event-stream.ts: the recorded many_allocs stream, repeated to a size. */
import { isHeartbeatLine } from '../src/testing/recording.js';
import { manyAllocs } from './support/manyAllocs.js';

/** The recording again, raft indexes shifted by `offset`, so each copy is new to the client. */
function shifted(lines: readonly string[], offset: number): string[] {
  return lines.map((line) => line.replace(/"(Index|ModifyIndex)":(\d+)/g, (_m, key: string, n: string) => `"${key}":${Number(n) + offset}`));
}

/** Copies of the recorded data lines until they reach `targetBytes` (with newlines). */
export function benchLines(targetBytes: number): { lines: string[]; bytes: number } {
  const data = manyAllocs().stream
    .filter((line) => !isHeartbeatLine(line))
    .map((line) => line.raw);
  const lines: string[] = [];
  let bytes = 0;
  for (let copy = 0; bytes < targetBytes; copy++) {
    for (const line of shifted(data, copy * 100_000)) {
      lines.push(line);
      bytes += Buffer.byteLength(line) + 1;
    }
  }
  return { lines, bytes };
}
