/**
 * The exec endpoint's query as Nomad 1.1.2's HTTP handler reads it (command/agent/alloc_endpoint.go
 * allocExec): `command` and `tty` are parsed before the websocket upgrade, so their mistakes are
 * HTTP 500s; a plain request that passes them is refused by the upgrader (400).
 */
import { goKind, unmarshal } from './goJson.js';

/** The `command` query parameter as json.Unmarshal reads it into a []string, or Nomad's error text. */
export function parseExecCommand(raw: string | null): string[] | string {
  const parsed = unmarshal(raw ?? '');
  const lead = 'failed to marshal command into json: ';
  if ('error' in parsed) return `${lead}${parsed.error}`;
  const value = parsed.value;
  if (value === null) return [];
  if (!Array.isArray(value)) return `${lead}json: cannot unmarshal ${goKind(value)} into Go value of type []string`;
  const wrong = value.find((item) => typeof item !== 'string' && item !== null);
  if (wrong !== undefined) return `${lead}json: cannot unmarshal ${goKind(wrong)} into Go value of type string`;
  return value.map((item) => (item === null ? '' : String(item)));
}

/** The `tty` query parameter as strconv.ParseBool reads it (absent: false), or Nomad's error text. */
export function parseExecTty(raw: string | null): boolean | string {
  if (raw === null) return false;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
  return `tty value is not a boolean: strconv.ParseBool: parsing ${JSON.stringify(raw)}: invalid syntax`;
}

/**
 * A plain request (no websocket upgrade) to the exec path: Nomad's handler reads `command` and `tty`
 * first (500s), then gorilla refuses the upgrade and Nomad appends why.
 */
export function plainExecAnswer(url: URL): { status: number; text: string } {
  const problem = [parseExecCommand(url.searchParams.get('command')), parseExecTty(url.searchParams.get('tty'))].find((p) => typeof p === 'string');
  if (typeof problem === 'string') return { status: 500, text: problem };
  return { status: 400, text: "Bad Request\nfailed to upgrade connection: websocket: the client is not using the websocket protocol: 'upgrade' token not found in 'Connection' header" };
}
