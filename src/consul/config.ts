/**
 * Where and how to reach Consul, read from the environment as Consul's own CLI and Go API client
 * read it (consul api/api.go DefaultConfig and NewClient).
 */
import { envValue, goBool, readCaPath, readConfigFile, type ConfigErrorFactory, type Env, type NomadTlsOptions } from '../nomad/config.js';
import { ConsulConfigError } from './errors.js';
import { registerEnvironmentSecrets, withoutCredentials } from '../secrets.js';

/** Where and how to reach a Consul agent or server. */
export interface ConsulConfig {
  /** http://host:port, https://host:port or unix:///path/to.sock. */
  address: string;
  /** ACL token, sent as X-Consul-Token. Never logged or put in an error. */
  token?: string;
  /** Consul Enterprise namespace (?ns=). */
  namespace?: string;
  /** Datacenter to ask (?dc=); default the agent's own. */
  datacenter?: string;
  /** Same shape as Nomad's: PEM text, servername, rejectUnauthorized. */
  tls?: NomadTlsOptions;
}

/** Consul's default agent, without a scheme: CONSUL_HTTP_SSL decides between http and https. */
const DEFAULT_CONSUL_HOST = '127.0.0.1:8500';
export const DEFAULT_CONSUL_ADDRESS = `http://${DEFAULT_CONSUL_HOST}`;


/**
 * Go's strconv.ParseBool. Consul only warns about anything else, and for CONSUL_HTTP_SSL_VERIFY
 * then turns verification off: a typo must not do that silently, so it is refused here.
 */
export function parseGoBool(variable: string, value: string): boolean {
  const parsed = goBool(value);
  if (parsed !== undefined) return parsed;
  throw new ConsulConfigError(`${variable}: ${JSON.stringify(value)} is not a boolean (true, false, 1, 0, t, f)`);
}

const consulConfigError: ConfigErrorFactory = (message) => new ConsulConfigError(message);

/**
 * Consul's address rules: a scheme of http, https or unix, or none (then https when `ssl`, else
 * http). A path after host:port is not part of Consul's addresses and is refused.
 */
export function consulAddress(address: string, ssl = false): string {
  const match = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(address);
  const scheme = match?.[1]?.toLowerCase() ?? (ssl ? 'https' : 'http');
  const rest = match?.[2] ?? address;
  if (scheme === 'unix') {
    if (rest === '') throw new ConsulConfigError('CONSUL_HTTP_ADDR: unix:// needs a socket path');
    return `unix://${rest}`;
  }
  if (scheme !== 'http' && scheme !== 'https') throw new ConsulConfigError(`CONSUL_HTTP_ADDR: unknown protocol scheme: ${scheme}`);
  let url: URL;
  try {
    url = new URL(`${scheme}://${rest}`);
  } catch {
    throw new ConsulConfigError(`CONSUL_HTTP_ADDR is not a valid address: ${withoutCredentials(address)}`);
  }
  if (url.pathname !== '/' || url.search !== '' || url.username !== '' || url.password !== '') {
    throw new ConsulConfigError(`CONSUL_HTTP_ADDR must be host:port, got ${url.host}${url.pathname === '/' ? '' : ' with a path'}`);
  }
  return url.origin;
}

/**
 * The configuration Consul's CLI would use with this environment: CONSUL_HTTP_ADDR (default
 * 127.0.0.1:8500) with CONSUL_HTTP_SSL, CONSUL_HTTP_TOKEN and CONSUL_HTTP_TOKEN_FILE (the file wins,
 * as in NewClient), CONSUL_CACERT / CONSUL_CAPATH, CONSUL_CLIENT_CERT + CONSUL_CLIENT_KEY,
 * CONSUL_TLS_SERVER_NAME, CONSUL_HTTP_SSL_VERIFY=false, CONSUL_NAMESPACE. `overrides` win.
 * Throws ConsulConfigError for an address or a file that cannot work; never with the token in it.
 */
export function consulConfigFromEnv(env: Env = process.env, overrides: Partial<ConsulConfig> = {}): ConsulConfig {
  registerEnvironmentSecrets(env);
  const sslValue = envValue(env, 'CONSUL_HTTP_SSL');
  const config: ConsulConfig = {
    address: consulAddress(envValue(env, 'CONSUL_HTTP_ADDR') ?? DEFAULT_CONSUL_HOST, sslValue !== undefined && parseGoBool('CONSUL_HTTP_SSL', sslValue)),
  };
  const tokenFile = envValue(env, 'CONSUL_HTTP_TOKEN_FILE');
  const token = (tokenFile === undefined ? undefined : readConfigFile(tokenFile, 'CONSUL_HTTP_TOKEN_FILE', consulConfigError).trim()) || envValue(env, 'CONSUL_HTTP_TOKEN');
  if (token !== undefined && token !== '') config.token = token;
  const namespace = envValue(env, 'CONSUL_NAMESPACE');
  if (namespace !== undefined) config.namespace = namespace;

  const tls: NomadTlsOptions = {};
  const caCert = envValue(env, 'CONSUL_CACERT');
  const caPath = envValue(env, 'CONSUL_CAPATH');
  if (caCert !== undefined) tls.ca = [readConfigFile(caCert, 'CONSUL_CACERT', consulConfigError)];
  else if (caPath !== undefined) tls.ca = readCaPath(caPath, 'CONSUL_CAPATH', consulConfigError);
  const clientCert = envValue(env, 'CONSUL_CLIENT_CERT');
  const clientKey = envValue(env, 'CONSUL_CLIENT_KEY');
  if ((clientCert === undefined) !== (clientKey === undefined)) {
    throw new ConsulConfigError('CONSUL_CLIENT_CERT and CONSUL_CLIENT_KEY must be set together');
  }
  if (clientCert !== undefined && clientKey !== undefined) {
    tls.cert = readConfigFile(clientCert, 'CONSUL_CLIENT_CERT', consulConfigError);
    tls.key = readConfigFile(clientKey, 'CONSUL_CLIENT_KEY', consulConfigError);
  }
  const servername = envValue(env, 'CONSUL_TLS_SERVER_NAME');
  if (servername !== undefined) tls.servername = servername;
  const verify = envValue(env, 'CONSUL_HTTP_SSL_VERIFY');
  if (verify !== undefined && !parseGoBool('CONSUL_HTTP_SSL_VERIFY', verify)) tls.rejectUnauthorized = false;
  if (Object.keys(tls).length > 0) config.tls = tls;
  return { ...config, ...overrides };
}

/**
 * The configuration when CONSUL_HTTP_ADDR is set, else undefined: the `warden` commands then judge
 * check-based groups from that Consul (without it, such groups are reported as not judged).
 */
export function consulConfigWhenSet(env: Env = process.env): ConsulConfig | undefined {
  return envValue(env, 'CONSUL_HTTP_ADDR') === undefined ? undefined : consulConfigFromEnv(env);
}
