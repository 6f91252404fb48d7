import { InvalidArgumentError } from 'commander';
import { parseListenAddress, type ListenAddress } from '../metrics/listenAddress.js';
import { errorMessage } from '../errorMessage.js';
import type { JobShard } from '../intake/scope.js';

/** Command-line values checked where they are read, so a bad one is a usage error, not a crash later. */

export function portNumber(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0 || value > 65_535) throw new InvalidArgumentError('expected a port number (0-65535; 0 picks a free one)');
  return value;
}

export function positiveNumber(text: string): number {
  const value = Number(text);
  if (!(value > 0) || !Number.isFinite(value)) throw new InvalidArgumentError('expected a positive number');
  return value;
}

/** A fraction in [0, 1). */
export function fraction(text: string): number {
  const value = Number(text);
  if (!(value >= 0 && value < 1)) throw new InvalidArgumentError('expected a fraction in [0, 1), e.g. 0.5');
  return value;
}

export function nonNegativeInteger(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return value;
}

/** `[host:]port` to listen on. */
export function listenAddress(text: string): ListenAddress {
  try {
    return parseListenAddress(text);
  } catch (error) {
    throw new InvalidArgumentError(errorMessage(error));
  }
}

/** `--shard i/n`: this process judges shard i (0-based) of n. */
export function jobShard(text: string): JobShard {
  const match = /^(\d+)\/(\d+)$/.exec(text.trim());
  const index = Number(match?.[1]);
  const count = Number(match?.[2]);
  if (match === null || !(count >= 1) || index >= count) throw new InvalidArgumentError('expected i/n with 0 <= i < n (this process judges shard i of n), e.g. 0/3');
  return { index, count };
}

/** `--setuser '/sbin/setuser user'`: the wrapper's argv, split on whitespace. */
export function argvWords(text: string): string[] {
  const words = text.split(/\s+/).filter((word) => word !== '');
  if (words.length === 0) throw new InvalidArgumentError('expected a command, e.g. "/sbin/setuser user"');
  return words;
}
