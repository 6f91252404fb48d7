/** CONSUL_* variables read as Consul's CLI reads them. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { consulConfigFromEnv } from '../../src/consul/config.js';
import { ConsulConfigError } from '../../src/consul/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'warden-consul-config-'));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('consulConfigFromEnv', () => {
  test('defaults: http://127.0.0.1:8500, no token, no TLS', () => {
    expect(consulConfigFromEnv({})).toEqual({ address: 'http://127.0.0.1:8500' });
  });

  test.each([
    ['consul.service:8500', {}, 'http://consul.service:8500'],
    ['https://consul.example:8501', {}, 'https://consul.example:8501'],
    ['10.0.0.5:8501', { CONSUL_HTTP_SSL: 'true' }, 'https://10.0.0.5:8501'],
    ['10.0.0.5:8500', { CONSUL_HTTP_SSL: '0' }, 'http://10.0.0.5:8500'],
    ['unix:///var/run/consul.sock', {}, 'unix:///var/run/consul.sock'],
    ['http://[::1]:8500/', {}, 'http://[::1]:8500'],
  ])('CONSUL_HTTP_ADDR %s (%j) → %s', (address, extra, expected) => {
    expect(consulConfigFromEnv({ CONSUL_HTTP_ADDR: address, ...extra }).address).toBe(expected);
  });

  test.each([['ftp://consul:21'], ['http://consul:8500/v1/agent'], ['http://user:pw@consul:8500'], ['unix://'], ['http://exa mple:1']])(
    'a bad address %s is a ConsulConfigError',
    (address) => {
      expect(() => consulConfigFromEnv({ CONSUL_HTTP_ADDR: address })).toThrow(ConsulConfigError);
    },
  );

  test('token from CONSUL_HTTP_TOKEN; CONSUL_HTTP_TOKEN_FILE wins when both are set, as in the Go client', () => {
    expect(consulConfigFromEnv({ CONSUL_HTTP_TOKEN: ' abc ' }).token).toBe('abc');
    const tokenFile = file('token', 'from-file\n');
    expect(consulConfigFromEnv({ CONSUL_HTTP_TOKEN: 'abc', CONSUL_HTTP_TOKEN_FILE: tokenFile }).token).toBe('from-file');
    expect(consulConfigFromEnv({ CONSUL_HTTP_TOKEN: 'abc', CONSUL_HTTP_TOKEN_FILE: file('empty', '  \n') }).token).toBe('abc');
  });

  test('an unreadable token file is an error that names the variable and not the token', () => {
    const error = (() => {
      try {
        consulConfigFromEnv({ CONSUL_HTTP_TOKEN: 'tok-123-secret', CONSUL_HTTP_TOKEN_FILE: join(dir, 'missing') });
      } catch (e) {
        return e as Error;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ConsulConfigError);
    expect(error?.message).toContain('CONSUL_HTTP_TOKEN_FILE');
    expect(error?.message).not.toContain('tok-123-secret');
  });

  test('TLS: CA file or directory, client pair, server name, verification off only for a false boolean', () => {
    const ca = file('ca.pem', 'CA');
    const caDir = mkdtempSync(join(dir, 'cas-'));
    writeFileSync(join(caDir, 'b.crt'), 'B');
    writeFileSync(join(caDir, 'a.pem'), 'A');
    writeFileSync(join(caDir, 'notes.txt'), 'ignored');
    const env = {
      CONSUL_HTTP_ADDR: 'https://consul:8501',
      CONSUL_CACERT: ca,
      CONSUL_CLIENT_CERT: file('cert.pem', 'CERT'),
      CONSUL_CLIENT_KEY: file('key.pem', 'KEY'),
      CONSUL_TLS_SERVER_NAME: 'server.dc1.consul',
      CONSUL_HTTP_SSL_VERIFY: 'false',
      CONSUL_NAMESPACE: 'team-a',
    };
    expect(consulConfigFromEnv(env)).toEqual({
      address: 'https://consul:8501',
      namespace: 'team-a',
      tls: { ca: ['CA'], cert: 'CERT', key: 'KEY', servername: 'server.dc1.consul', rejectUnauthorized: false },
    });
    expect(consulConfigFromEnv({ CONSUL_CAPATH: caDir }).tls).toEqual({ ca: ['A', 'B'] });
    expect(consulConfigFromEnv({ CONSUL_HTTP_SSL_VERIFY: 'true' }).tls).toBeUndefined();
  });

  test('half a client pair, or a boolean Go would not parse, is refused rather than guessed', () => {
    expect(() => consulConfigFromEnv({ CONSUL_CLIENT_CERT: file('c.pem', 'C') })).toThrow('CONSUL_CLIENT_CERT and CONSUL_CLIENT_KEY must be set together');
    // Consul itself would turn verification off on a typo here.
    expect(() => consulConfigFromEnv({ CONSUL_HTTP_SSL_VERIFY: 'flase' })).toThrow(ConsulConfigError);
    expect(() => consulConfigFromEnv({ CONSUL_HTTP_SSL: 'yes' })).toThrow(ConsulConfigError);
  });

  test('overrides win', () => {
    expect(consulConfigFromEnv({ CONSUL_HTTP_TOKEN: 'a' }, { token: 'b', datacenter: 'dc2' })).toMatchObject({ token: 'b', datacenter: 'dc2' });
  });
});
