#!/usr/bin/env -S npx tsx
import { main } from './main.js';

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 2;
});
