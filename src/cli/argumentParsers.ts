import { InvalidArgumentError } from 'commander';
import { parseListenAddress, type ListenAddress } from '../metrics/server.js';
import { errorMessage } from '../errorMessage.js';

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
