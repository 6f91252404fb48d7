import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_NOMAD_ADDRESS, NomadConfigError, goBool, nomadConfigFromEnv } from '../../src/nomad/config.js';

describe('nomadConfigFromEnv reads the environment as the Nomad CLI does', () => {
  test('defaults to http://127.0.0.1:4646 and treats blank variables as unset', () => {
    expect(nomadConfigFromEnv({})).toEqual({ address: DEFAULT_NOMAD_ADDRESS });
    expect(nomadConfigFromEnv({ NOMAD_ADDR: '  ', NOMAD_TOKEN: '' })).toEqual({ address: DEFAULT_NOMAD_ADDRESS });
  });

  test('a bare host:port means http; token, namespace and region are taken; overrides win', () => {
    const config = nomadConfigFromEnv(
      { NOMAD_ADDR: 'nomad.internal:4646/', NOMAD_TOKEN: 'secret', NOMAD_NAMESPACE: 'apps', NOMAD_REGION: 'eu' },
      { namespace: 'other' },
    );
    expect(config).toEqual({ address: 'http://nomad.internal:4646', token: 'secret', namespace: 'other', region: 'eu' });
    expect(nomadConfigFromEnv({ NOMAD_ADDR: 'unix:///run/nomad.sock' }).address).toBe('unix:///run/nomad.sock');
    expect(() => nomadConfigFromEnv({ NOMAD_ADDR: 'ftp://nomad:21' })).toThrow(NomadConfigError);
  });

  test('NOMAD_SKIP_VERIFY follows Go ParseBool: values it refuses leave verification on', () => {
    for (const yes of ['1', 't', 'true', 'TRUE', 'True']) {
      expect(nomadConfigFromEnv({ NOMAD_SKIP_VERIFY: yes }).tls?.rejectUnauthorized).toBe(false);
    }
    for (const notYes of ['0', 'false', 'yes', 'on', 'tru']) {
      expect(nomadConfigFromEnv({ NOMAD_SKIP_VERIFY: notYes }).tls).toBeUndefined();
    }
    expect(goBool('F')).toBe(false);
    expect(goBool('yes')).toBeUndefined();
  });

  test('certificates are read from files; a client certificate needs its key; an unreadable file is a typed error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'warden-config-'));
    writeFileSync(join(dir, 'ca.pem'), 'CA PEM');
    writeFileSync(join(dir, 'cert.pem'), 'CERT PEM');
    writeFileSync(join(dir, 'key.pem'), 'KEY PEM');
    const config = nomadConfigFromEnv({
      NOMAD_CACERT: join(dir, 'ca.pem'),
      NOMAD_CLIENT_CERT: join(dir, 'cert.pem'),
      NOMAD_CLIENT_KEY: join(dir, 'key.pem'),
      NOMAD_TLS_SERVER_NAME: 'server.global.nomad',
    });
    expect(config.tls).toEqual({ ca: ['CA PEM'], cert: 'CERT PEM', key: 'KEY PEM', servername: 'server.global.nomad' });
    expect(nomadConfigFromEnv({ NOMAD_CAPATH: dir }).tls?.ca).toEqual(['CA PEM', 'CERT PEM', 'KEY PEM']);
    expect(() => nomadConfigFromEnv({ NOMAD_CLIENT_CERT: join(dir, 'cert.pem') })).toThrow(NomadConfigError);
    expect(() => nomadConfigFromEnv({ NOMAD_CACERT: join(dir, 'missing.pem') })).toThrow(/NOMAD_CACERT/);
  });
});
