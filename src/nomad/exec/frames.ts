/**
 * The frames of Nomad's exec websocket (nomad-protocol §3.3–3.4): JSON text frames, binary payloads
 * in standard padded base64. One module for both directions, used by the client and the fake.
 */

/** A frame Nomad sends to the client. */
export type ServerFrame =
  | { kind: 'stdout' | 'stderr'; data: Buffer }
  | { kind: 'stdout.close' | 'stderr.close' }
  | { kind: 'exited'; exitCode: number }
  /** A frame with none of stdout/stderr/exited: Nomad's Go client ignores it, so do we. */
  | { kind: 'noop' };

/** A frame the client sends to Nomad. */
export type ClientFrame =
  | { kind: 'stdin'; data: Buffer }
  | { kind: 'stdin.close' }
  | { kind: 'tty_size'; rows: number; cols: number }
  | { kind: 'heartbeat' };

/** A frame that is not JSON or not shaped like any frame of the protocol. */
export class ExecFrameError extends Error {
  readonly code = 'WARDEN_EXEC_FRAME';
  constructor(message: string) {
    super(message);
    this.name = 'ExecFrameError';
  }
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseObject(raw: string): Json {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new ExecFrameError(`exec frame is not JSON: ${(error as Error).message}`);
  }
  if (!isObject(value)) throw new ExecFrameError('exec frame is not a JSON object');
  return value;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function decodeBase64(data: unknown, field: string): Buffer {
  if (typeof data !== 'string' || data.length % 4 !== 0 || !BASE64.test(data)) {
    throw new ExecFrameError(`exec frame ${field}.data is not base64`);
  }
  return Buffer.from(data, 'base64');
}

/** One stream operation (`{"data": "..."}` or `{"close": true}`), shared by stdin, stdout and stderr. */
function decodeOperation<K extends string>(
  operation: unknown,
  field: K,
): { kind: K; data: Buffer } | { kind: `${K}.close` } {
  if (!isObject(operation)) throw new ExecFrameError(`exec frame ${field} is not an object`);
  if (operation.close === true) return { kind: `${field}.close` };
  return { kind: field, data: decodeBase64(operation.data, field) };
}

export function decodeServerFrame(raw: string): ServerFrame {
  const frame = parseObject(raw);
  if (frame.exited === true) {
    const result = frame.result;
    // exit_code is omitempty on the Go side: absent means 0.
    const exitCode = isObject(result) && result.exit_code !== undefined ? result.exit_code : 0;
    if (typeof exitCode !== 'number' || !Number.isInteger(exitCode)) {
      throw new ExecFrameError('exec frame exited.result.exit_code is not an integer');
    }
    return { kind: 'exited', exitCode };
  }
  if (frame.stdout !== undefined) return decodeOperation(frame.stdout, 'stdout');
  if (frame.stderr !== undefined) return decodeOperation(frame.stderr, 'stderr');
  return { kind: 'noop' };
}

export function decodeClientFrame(raw: string): ClientFrame {
  const frame = parseObject(raw);
  const keys = Object.keys(frame);
  if (keys.length === 0) return { kind: 'heartbeat' };
  if (frame.stdin !== undefined) return decodeOperation(frame.stdin, 'stdin');
  const size = frame.tty_size;
  if (isObject(size)) {
    const { height, width } = size;
    if (!isDimension(height) || !isDimension(width)) {
      throw new ExecFrameError('exec frame tty_size needs integer height and width');
    }
    return { kind: 'tty_size', rows: height, cols: width };
  }
  throw new ExecFrameError(`unexpected message type: ${keys.join(', ')}`);
}

/** Nomad sets what it is given: 0×0 included (a terminal that reports no size). */
function isDimension(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 0xffff;
}

export function encodeServerFrame(frame: Exclude<ServerFrame, { kind: 'noop' }>): string {
  switch (frame.kind) {
    case 'stdout':
    case 'stderr':
      return `{"${frame.kind}":{"data":"${frame.data.toString('base64')}"}}`;
    case 'stdout.close':
      return '{"stdout":{"close":true}}';
    case 'stderr.close':
      return '{"stderr":{"close":true}}';
    case 'exited':
      return frame.exitCode === 0 ? '{"exited":true,"result":{}}' : `{"exited":true,"result":{"exit_code":${frame.exitCode}}}`;
  }
}

export function encodeClientFrame(frame: ClientFrame): string {
  switch (frame.kind) {
    case 'stdin':
      return `{"stdin":{"data":"${frame.data.toString('base64')}"}}`;
    case 'stdin.close':
      return '{"stdin":{"close":true}}';
    case 'tty_size':
      return `{"tty_size":{"height":${frame.rows},"width":${frame.cols}}}`;
    case 'heartbeat':
      return '{}';
  }
}
