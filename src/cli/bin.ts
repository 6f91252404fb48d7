#!/usr/bin/env node
import { main } from './main.js';
import { errorMessage } from '../errorMessage.js';
import { EXIT_INTERNAL } from './exitCodes.js';

main().then(
  (exitCode) => {
    if (exitCode !== undefined) process.exitCode = exitCode;
  },
  (error: unknown) => {
    process.stderr.write(`warden: ${errorMessage(error)}\n`);
    process.exitCode = EXIT_INTERNAL;
  },
);
