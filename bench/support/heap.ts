import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// Benchmarks measure retained heap, so they need gc() without asking the caller for --expose-gc.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap in use after two full collections: what is retained, not what is garbage yet. */
export function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}
