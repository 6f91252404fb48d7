/**
 * The credentials Warden holds, and the one function that takes them out of text.
 *
 * A server (or a proxy before it) may echo what it was sent: the token in an error body, in a
 * stream's error text, in a close reason. Every text that came from the network passes through
 * scrubSecrets where it becomes an error message or a problem (the typed errors' constructors, the
 * stream's skip reports), so no caller can forget it. The constructors cannot be handed the
 * secrets, so they are registered here where a connection is configured (nomadAuthHeaders, the
 * transport's credential headers) and where the environment is read (nomadConfigFromEnv,
 * consulConfigFromEnv), before anything can come back: Nomad's and Consul's ACL tokens, and the
 * user:password of an address.
 */

export const REDACTED = '[redacted]';

/**
 * Shorter values are not treated as secrets: replacing every "ab" in every message would garble
 * them all and protect next to nothing.
 */
const MIN_SECRET_LENGTH = 4;

/** A process rarely holds more than a few; the oldest are forgotten past this many. */
const MAX_SECRETS = 256;

/** Longest first, so a secret that contains another is replaced whole. */
let registered: string[] = [];

/** Remembers `secret` (an ACL token, a password) so that scrubSecrets removes it from any text. */
export function registerSecret(secret: string | undefined): void {
  if (secret === undefined || secret.length < MIN_SECRET_LENGTH || registered.includes(secret)) return;
  const kept = registered.length < MAX_SECRETS ? registered : registered.slice(1);
  registered = [...kept, secret].sort((a, b) => b.length - a.length);
}

/** Registers the userinfo of an address (`https://user:password@host`): password, and user:password. */
export function registerAddressCredentials(address: string): void {
  let url: URL;
  try {
    // Consul's and Nomad's CLIs take host:port without a scheme too.
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(address) ? address : `http://${address}`);
  } catch {
    return;
  }
  const { username, password } = url;
  if (username === '' && password === '') return;
  // The whole userinfo, and its secret part: the password, else a user name that carries a token.
  for (const raw of [password === '' ? username : `${username}:${password}`, password === '' ? username : password]) {
    registerSecret(raw);
    registerSecret(safeDecode(raw));
  }
}

/** Variables whose values are credentials, as the Nomad and Consul CLIs read them. */
const TOKEN_VARIABLES = ['NOMAD_TOKEN', 'CONSUL_HTTP_TOKEN'] as const;
/** `user:password` for HTTP basic auth. */
const AUTH_VARIABLES = ['NOMAD_HTTP_AUTH', 'CONSUL_HTTP_AUTH'] as const;
const ADDRESS_VARIABLES = ['NOMAD_ADDR', 'CONSUL_HTTP_ADDR'] as const;

/**
 * Registers every credential the environment holds for Nomad and Consul, whichever of them this
 * process talks to: a Nomad server may echo the Consul token too.
 */
export function registerEnvironmentSecrets(env: Readonly<Record<string, string | undefined>>): void {
  for (const name of TOKEN_VARIABLES) registerSecret(env[name]?.trim());
  for (const name of AUTH_VARIABLES) {
    const auth = env[name]?.trim();
    registerSecret(auth);
    registerSecret(auth?.slice(auth.indexOf(':') + 1));
  }
  for (const name of ADDRESS_VARIABLES) {
    const address = env[name]?.trim();
    if (address !== undefined) registerAddressCredentials(address);
  }
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** `address` with its userinfo (`user:password@`) replaced: for an address shown or put in an error. */
export function withoutCredentials(address: string): string {
  return address.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/@?#]*@/i, (_all, scheme: string | undefined) => `${scheme ?? ''}${REDACTED}@`);
}

/** A secret cut at the end of `text`, as an excerpt leaves it: the length of its part, or 0. */
function cutAtEnd(text: string, secret: string): number {
  for (let length = Math.min(secret.length - 1, text.length); length >= MIN_SECRET_LENGTH; length--) {
    if (text.endsWith(secret.slice(0, length))) return length;
  }
  return 0;
}

/** A secret cut at the start of `text`: the length of its part, or 0. */
function cutAtStart(text: string, secret: string): number {
  for (let length = Math.min(secret.length - 1, text.length); length >= MIN_SECRET_LENGTH; length--) {
    if (text.startsWith(secret.slice(secret.length - length))) return length;
  }
  return 0;
}

/**
 * `text` with every registered secret, and `extra` ones, replaced by [redacted]; also the part of
 * one that an excerpt cut at either end of the text (four characters or more).
 */
export function scrubSecrets(text: string, extra: readonly (string | undefined)[] = []): string {
  const secrets =
    extra.length === 0
      ? registered
      : [...registered, ...extra.filter((s): s is string => s !== undefined && s.length >= MIN_SECRET_LENGTH)].sort((a, b) => b.length - a.length);
  let clean = text;
  for (const secret of secrets) if (clean.includes(secret)) clean = clean.split(secret).join(REDACTED);
  for (const secret of secrets) {
    const end = cutAtEnd(clean, secret);
    if (end > 0) clean = clean.slice(0, clean.length - end) + REDACTED;
    const start = cutAtStart(clean, secret);
    if (start > 0) clean = REDACTED + clean.slice(start);
  }
  return clean;
}
