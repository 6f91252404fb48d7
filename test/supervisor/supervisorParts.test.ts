import { BoundedHistory } from '../../src/boundedHistory.js';
import { structuredLogger, type LogFields } from '../../src/logger.js';
import { resolveScope } from '../../src/intake/scope.js';
import { registerAddressCredentials } from '../../src/secrets.js';

describe('scope', () => {
  test('defaults to the default namespace and every job', () => {
    const scope = resolveScope();
    expect(scope.includes('default', 'x')).toBe(true);
    expect(scope.includes(undefined, 'x')).toBe(true);
    expect(scope.includes('prod', 'x')).toBe(false);
  });

  test('namespaces and job prefixes both restrict; "*" means every namespace', () => {
    const scope = resolveScope({ namespaces: ['*'], jobPrefixes: ['runner-', 'web'] });
    expect(scope.includes('prod', 'runner-7')).toBe(true);
    expect(scope.includes('prod', 'webapp')).toBe(true);
    expect(scope.includes('prod', 'batch')).toBe(false);
    expect(resolveScope({ namespaces: ['a', 'b'] }).includes('b', 'j')).toBe(true);
  });
});

describe('BoundedHistory', () => {
  test('keeps the last entries, refreshed on write', () => {
    const history = new BoundedHistory<number>(2);
    history.set('a', 1);
    history.set('b', 2);
    history.set('a', 3);
    history.set('c', 4);
    expect(history.get('b')).toBeUndefined();
    expect([...history.values()]).toEqual([3, 4]);
    expect(() => new BoundedHistory(0)).toThrow(RangeError);
  });
});

describe('structuredLogger', () => {
  test('removes the token from messages and nested fields', () => {
    const records: [LogFields, string][] = [];
    const sink = { debug: () => undefined, info: () => undefined, error: () => undefined, warn: (f: LogFields, m: string) => records.push([f, m]) };
    const logger = structuredLogger(sink, ['s3cr3t-token']);
    logger.warn('request with s3cr3t-token failed', { error: new Error('x-nomad-token: s3cr3t-token'), nested: { list: ['s3cr3t-token'] } });
    logger.warn({ token: 's3cr3t-token' }, 'pino order, s3cr3t-token');
    expect(JSON.stringify(records)).not.toContain('s3cr3t-token');
    expect(records[0]![1]).toBe('request with [redacted] failed');
    expect(records[1]).toEqual([{ token: '[redacted]' }, 'pino order, [redacted]']);
    // Given none, it still removes what a connection registered (src/secrets.ts): a password of an address.
    registerAddressCredentials('https://ops:pa55-w0rd@nomad.example:4646');
    structuredLogger(sink, [undefined, '']).warn('proxy said: bad credentials ops:pa55-w0rd');
    expect(records[2]![1]).toBe('proxy said: bad credentials [redacted]');
  });

  test('hands the sink fields first, whichever order the call used', () => {
    const records: unknown[][] = [];
    const record = (...args: unknown[]): number => records.push(args);
    const logger = structuredLogger({ debug: record, info: record, warn: record, error: record });
    logger.info('message first', { a: 1 });
    logger.info({ b: 2 }, 'fields first');
    logger.info('message alone');
    expect(records).toEqual([[{ a: 1 }, 'message first'], [{ b: 2 }, 'fields first'], [{}, 'message alone']]);
    expect(structuredLogger(logger)).toBe(logger);
  });
});
