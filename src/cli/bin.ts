#!/usr/bin/env -S npx tsx
import { main } from './main.js';
import { errorMessage } from '../errorMessage.js';

main().catch((error: unknown) => {
  console.error(errorMessage(error));
  process.exitCode = 2;
});
