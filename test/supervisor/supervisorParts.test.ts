import { BoundedHistory } from '../../src/supervisor/boundedHistory.js';
import { redactingLogger, type LogFields } from '../../src/supervisor/logger.js';
import { resolveScope } from '../../src/supervisor/scope.js';

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

describe('redactingLogger', () => {
  test('removes the token from messages and nested fields', () => {
    const records: [string, LogFields | undefined][] = [];
    const sink = { debug: () => undefined, info: () => undefined, error: () => undefined, warn: (m: string, f?: LogFields) => records.push([m, f]) };
    const logger = redactingLogger(sink, ['s3cr3t-token']);
    logger.warn('request with s3cr3t-token failed', { error: new Error('x-nomad-token: s3cr3t-token'), nested: { list: ['s3cr3t-token'] } });
    expect(JSON.stringify(records)).not.toContain('s3cr3t-token');
    expect(records[0]![0]).toBe('request with [redacted] failed');
    expect(redactingLogger(sink, [undefined, ''])).toBe(sink);
  });
});
