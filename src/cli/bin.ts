#!/usr/bin/env node
import { setFlagsFromString } from 'node:v8';
import { main } from './main.js';
import { errorMessage } from '../errorMessage.js';
import { EXIT_INTERNAL } from './exitCodes.js';

// undici parses HTTP with llhttp compiled to WebAssembly. After ~1.8 MB of "bytes executed" (V8's
// default budget, spent by the few answers `warden exec` reads) V8 recompiles its 34 kB parse loop
// with TurboFan: seconds of a core on a busy machine and 40 MB, and the process waits for it to
// finish before it can exit. A hundred times the budget keeps short commands on the baseline code;
// a long-running one (serve, watch) still gets the optimised parser once it is really hot. Set
// before the first connection compiles the module.
setFlagsFromString('--wasm-tiering-budget=180000000');

main().then(
  (exitCode) => {
    if (exitCode !== undefined) process.exitCode = exitCode;
  },
  (error: unknown) => {
    process.stderr.write(`warden: ${errorMessage(error)}\n`);
    process.exitCode = EXIT_INTERNAL;
  },
);
