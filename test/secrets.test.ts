/**
 * src/secrets.ts: which credentials are known, how they are taken out of text, and the typed errors
 * that apply it to whatever came from the network. The registry is per process (here: per test
 * file), so every secret below is used by one test only.
 */
import { ConsulHttpError, ConsulUnavailableError } from '../src/consul/errors.js';
import { NomadClient } from '../src/nomad/client.js';
import { nomadConfigFromEnv } from '../src/nomad/config.js';
import { NomadConnectionError, NomadDecodeError, NomadHttpError, NomadStreamError } from '../src/nomad/errors.js';
import { decodeFrame, undecodableBatch } from '../src/nomad/eventFrames.js';
import { errorFromClose, errorFromHttpStatus } from '../src/nomad/exec/errors.js';
import { parseNomadJson } from '../src/nomad/json.js';
import { REDACTED, registerAddressCredentials, registerSecret, scrubSecrets, withoutCredentials } from '../src/secrets.js';

describe('scrubSecrets', () => {
  it('replaces every occurrence of a registered secret, and only once it is registered', () => {
    const token = '11111111-2222-4333-8444-555555555555';
    expect(scrubSecrets(`token ${token}`)).toBe(`token ${token}`);
    registerSecret(token);
    expect(scrubSecrets(`token ${token} and again ${token}.`)).toBe(`token ${REDACTED} and again ${REDACTED}.`);
  });

  it('takes extra secrets, ignores ones too short to tell from text, and replaces a longer secret whole', () => {
    expect(scrubSecrets('a b abc', ['abc', 'b', undefined])).toBe('a b abc');
    expect(scrubSecrets('pw=open-sesame-1234', ['open-sesame', 'open-sesame-1234'])).toBe(`pw=${REDACTED}`);
  });

  it('also masks a secret that an excerpt cut at either end (four characters or more)', () => {
    const token = 'abcdef12-3456-4789-8abc-def012345678';
    registerSecret(token);
    expect(scrubSecrets(`near "…${token.slice(0, 10)}`)).toBe(`near "…${REDACTED}`);
    expect(scrubSecrets(`${token.slice(-9)}", more`)).toBe(`${REDACTED}", more`);
    expect(scrubSecrets(`ends in ${token.slice(0, 3)}`)).toBe(`ends in ${token.slice(0, 3)}`);
  });
});

describe('address credentials', () => {
  it('registers the password (as written and decoded) and user:password; a lone user name is taken for a token', () => {
    registerAddressCredentials('https://ops:p%40ss-w0rd!@nomad.example:4646');
    expect(scrubSecrets('ops:p%40ss-w0rd! / p@ss-w0rd! / p%40ss-w0rd!')).toBe(`${REDACTED} / ${REDACTED} / ${REDACTED}`);
    registerAddressCredentials('consul.example:8500');
    registerAddressCredentials('tok-9f8e7d6c@consul.example:8500');
    expect(scrubSecrets('proxy: user tok-9f8e7d6c refused')).toBe(`proxy: user ${REDACTED} refused`);
  });

  it('withoutCredentials drops the userinfo of an address shown', () => {
    expect(withoutCredentials('http://ops:pw@127.0.0.1:4646')).toBe(`http://${REDACTED}@127.0.0.1:4646`);
    expect(withoutCredentials('ops:pw@127.0.0.1:4646')).toBe(`${REDACTED}@127.0.0.1:4646`);
    expect(withoutCredentials('http://127.0.0.1:4646/path@x')).toBe('http://127.0.0.1:4646/path@x');
  });

  it('a malformed NOMAD_ADDR is reported without its password', () => {
    expect(() => nomadConfigFromEnv({ NOMAD_ADDR: 'http://ops:sw0rdfish-77@[bad' })).toThrow(`NOMAD_ADDR is not a valid address: http://${REDACTED}@[bad`);
  });
});

describe('where network text becomes an error, it is scrubbed', () => {
  const token = 'feedface-0000-4000-8000-00000000beef';
  beforeAll(() => registerSecret(token));

  it('NomadHttpError: message and body, scrubbed before the body is cut to its excerpt', () => {
    const body = `${'x'.repeat(2040)}${token} trailing`;
    const error = new NomadHttpError(500, 'GET', '/v1/jobs', body);
    expect(error.body).not.toContain(token.slice(0, 8));
    expect(error.message).not.toContain(token.slice(0, 8));
    expect(new NomadHttpError(403, 'GET', '/v1/jobs', `denied for ${token}`).message).toBe(`Nomad GET /v1/jobs: 403 (denied for ${REDACTED})`);
  });

  it('NomadDecodeError: message and an excerpt that cuts the token', () => {
    const text = `${'y'.repeat(180)}${token}`;
    const error = new NomadDecodeError(`malformed near ${token}`, text);
    expect(error.message).toBe(`malformed near ${REDACTED}`);
    expect(error.excerpt).toBe(`${'y'.repeat(180)}${REDACTED}`);
  });

  it("malformed JSON: V8's quoted piece of the text is left out (it could hold part of a secret)", () => {
    let error: unknown;
    try {
      parseNomadJson(`x${token}`);
    } catch (thrown) {
      error = thrown;
    }
    expect((error as Error).message).toBe("malformed JSON: Unexpected token 'x' (not valid JSON)");
    expect((error as NomadDecodeError).excerpt).toBe(`x${REDACTED}`);
  });

  it('NomadStreamError, NomadConnectionError, Consul errors, exec errors', () => {
    expect(new NomadStreamError('server-error', `error from Nomad: ${token}`).message).toBe(`error from Nomad: ${REDACTED}`);
    expect(new NomadConnectionError('GET', '/v1/jobs', new Error(`TLS: cert for ${token}`)).message).toBe(`Nomad GET /v1/jobs: connection failed: TLS: cert for ${REDACTED}`);
    const consul = new ConsulHttpError(403, 'GET', '/v1/health/state/any', `ACL not found: ${token}`);
    expect([consul.message, consul.body]).toEqual([`Consul GET /v1/health/state/any: 403 (ACL not found: ${REDACTED})`, `ACL not found: ${REDACTED}`]);
    expect(new ConsulUnavailableError('decode', `bad ${token}`).message).toBe(`bad ${REDACTED}`);
    const closed = errorFromClose(1008, `permission denied: ${token}`);
    expect([closed.message, closed.reason]).toEqual([`exec permission denied: permission denied: ${REDACTED}`, `permission denied: ${REDACTED}`]);
    expect(errorFromHttpStatus(403, `no, ${token}`).message).toBe(`exec permission denied: no, ${REDACTED}`);
  });

  it('skip reports: the excerpt of a batch that does not decode, and an unusable event whose Topic is the token', () => {
    const line = `{"Events":[{"Topic":"${token}","Payload":{"a":"${token}"}}, ###],"Index":9}`;
    let error: unknown;
    try {
      decodeFrame(line);
    } catch (thrown) {
      error = thrown;
    }
    const skipped = undecodableBatch(line, error as NomadDecodeError);
    expect(JSON.stringify(skipped)).not.toContain(token.slice(0, 8));
    const frame = decodeFrame(`{"Events":[{"Topic":"${token}","Payload":"${token}"}],"Index":9}`);
    expect(frame?.skipped?.examples).toEqual([{ index: 9, position: 0, reason: `${REDACTED} event without a numeric Index`, excerpt: `${REDACTED}: "${REDACTED}"` }]);
  });
});

describe('registration', () => {
  it('a client made from a config (not the environment) registers its token and its address password', () => {
    const token = 'a5a5a5a5-b6b6-4c7c-8d8d-e9e9e9e9e9e9';
    const text = `echo ${token} and s3same-pw`;
    expect(scrubSecrets(text)).toBe(text);
    const client = new NomadClient({ address: 'http://ops:s3same-pw@127.0.0.1:1', token });
    void client.close();
    expect(scrubSecrets(text)).toBe(`echo ${REDACTED} and ${REDACTED}`);
  });

  it('reading the environment registers NOMAD_TOKEN, CONSUL_HTTP_TOKEN, *_HTTP_AUTH and the addresses\' userinfo', () => {
    const secrets = ['0a0a0a0a-nomad', '0b0b0b0b-consul', 'basic-pw-n', 'basic-pw-c', 'addr-pw-n', 'addr-pw-c'];
    expect(scrubSecrets(secrets.join(' '))).toBe(secrets.join(' '));
    nomadConfigFromEnv({
      NOMAD_TOKEN: secrets[0],
      CONSUL_HTTP_TOKEN: secrets[1],
      NOMAD_HTTP_AUTH: `u:${secrets[2]}`,
      CONSUL_HTTP_AUTH: `u:${secrets[3]}`,
      NOMAD_ADDR: `http://u:${secrets[4]}@127.0.0.1:4646`,
      CONSUL_HTTP_ADDR: `u:${secrets[5]}@127.0.0.1:8500`,
    });
    expect(scrubSecrets(secrets.join(' '))).toBe(secrets.map(() => REDACTED).join(' '));
  });
});
