import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { registerEnvironmentSecrets, withoutCredentials } from '../secrets.js';

/** TLS settings shared by the HTTP pool and the exec websocket. Certificates are PEM text. */
export interface NomadTlsOptions {
  ca?: string[];
  cert?: string;
  key?: string;
  /** Name to verify the server certificate against (Nomad's are `server.<region>.nomad`). */
  servername?: string;
  /** false only when NOMAD_SKIP_VERIFY is set: accepts any certificate. */
  rejectUnauthorized?: boolean;
}

/** Where and how to reach a Nomad cluster, read as the Nomad CLI reads it. */
export interface NomadConfig {
  /** http://host:port, https://host:port or unix:///path/to.sock. */
  address: string;
  /** ACL token, sent as X-Nomad-Token. Never logged or put in an error. */
  token?: string;
  namespace?: string;
  region?: string;
  tls?: NomadTlsOptions;
}

export const DEFAULT_NOMAD_ADDRESS = 'http://127.0.0.1:4646';

/** Raised for a configuration that cannot work (unreadable certificate, malformed address). */
export class NomadConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NomadConfigError';
  }
}

/** The process environment, or any stand-in for it. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Makes the error a settings reader throws: NomadConfigError here, the Consul client's own for CONSUL_*. */
export type ConfigErrorFactory = (message: string) => Error;

const nomadConfigError: ConfigErrorFactory = (message) => new NomadConfigError(message);

/** The text of a file named by an environment variable (a PEM file, a token file). */
export function readConfigFile(path: string, variable: string, toError: ConfigErrorFactory = nomadConfigError): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw toError(`${variable}: cannot read ${path}: ${(error as Error).message}`);
  }
}

/** NOMAD_CAPATH (or CONSUL_CAPATH) names a directory of PEM files (or a single file), as in the CLIs. */
export function readCaPath(path: string, variable = 'NOMAD_CAPATH', toError: ConfigErrorFactory = nomadConfigError): string[] {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat === undefined) throw toError(`${variable}: ${path} does not exist`);
  if (!stat.isDirectory()) return [readConfigFile(path, variable, toError)];
  return readdirSync(path)
    .filter((name) => /\.(pem|crt)$/i.test(name))
    .sort()
    .map((name) => readConfigFile(join(path, name), variable, toError));
}

/** Go's strconv.ParseBool, which the Nomad and Consul CLIs apply to their boolean variables; undefined when Go would refuse it. */
export function goBool(value: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  return undefined;
}

/** A variable's value, trimmed; unset and blank are the same, as in the Go CLIs. */
export function envValue(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/**
 * The configuration the Nomad CLI would use with this environment: NOMAD_ADDR (default
 * http://127.0.0.1:4646), NOMAD_TOKEN, NOMAD_NAMESPACE, NOMAD_REGION, NOMAD_CACERT / NOMAD_CAPATH,
 * NOMAD_CLIENT_CERT + NOMAD_CLIENT_KEY, NOMAD_TLS_SERVER_NAME, NOMAD_SKIP_VERIFY. `overrides` win.
 */
export function nomadConfigFromEnv(env: Env = process.env, overrides: Partial<NomadConfig> = {}): NomadConfig {
  registerEnvironmentSecrets(env);
  const address = envValue(env, 'NOMAD_ADDR') ?? DEFAULT_NOMAD_ADDRESS;
  const tls: NomadTlsOptions = {};
  const caCert = envValue(env, 'NOMAD_CACERT');
  const caPath = envValue(env, 'NOMAD_CAPATH');
  if (caCert !== undefined) tls.ca = [readConfigFile(caCert, 'NOMAD_CACERT')];
  else if (caPath !== undefined) tls.ca = readCaPath(caPath);
  const clientCert = envValue(env, 'NOMAD_CLIENT_CERT');
  const clientKey = envValue(env, 'NOMAD_CLIENT_KEY');
  if ((clientCert === undefined) !== (clientKey === undefined)) {
    throw new NomadConfigError('NOMAD_CLIENT_CERT and NOMAD_CLIENT_KEY must be set together');
  }
  if (clientCert !== undefined && clientKey !== undefined) {
    tls.cert = readConfigFile(clientCert, 'NOMAD_CLIENT_CERT');
    tls.key = readConfigFile(clientKey, 'NOMAD_CLIENT_KEY');
  }
  const servername = envValue(env, 'NOMAD_TLS_SERVER_NAME');
  if (servername !== undefined) tls.servername = servername;
  // As the Nomad CLI: a value ParseBool refuses is ignored, so verification stays on.
  const skipVerify = envValue(env, 'NOMAD_SKIP_VERIFY');
  if (skipVerify !== undefined && goBool(skipVerify) === true) tls.rejectUnauthorized = false;

  const config: NomadConfig = { address: normalizeAddress(address) };
  const token = envValue(env, 'NOMAD_TOKEN');
  const namespace = envValue(env, 'NOMAD_NAMESPACE');
  const region = envValue(env, 'NOMAD_REGION');
  if (token !== undefined) config.token = token;
  if (namespace !== undefined) config.namespace = namespace;
  if (region !== undefined) config.region = region;
  if (Object.keys(tls).length > 0) config.tls = tls;
  return { ...config, ...overrides };
}

/** Accepts what the Nomad CLI accepts: a bare host:port means http. */
export function normalizeAddress(address: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(address) ? address : `http://${address}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new NomadConfigError(`NOMAD_ADDR is not a valid address: ${withoutCredentials(address)}`);
  }
  if (!['http:', 'https:', 'unix:'].includes(url.protocol)) {
    throw new NomadConfigError(`NOMAD_ADDR must be http://, https:// or unix://, got ${url.protocol}//`);
  }
  return withScheme.replace(/\/+$/, '');
}
