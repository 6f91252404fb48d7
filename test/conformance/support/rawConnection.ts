/**
 * HTTP/1.1 requests written by hand on one TCP connection, for what a client library hides: whether
 * the server keeps a connection after an answer (and answers the next request on it) or ends it.
 */
import { connect } from 'node:net';

export interface RawAnswer {
  readonly status: number;
  /** The Connection header, if any (lower case). */
  readonly connection: string | undefined;
  readonly body: string;
}

export interface OneConnection {
  readonly answers: readonly RawAnswer[];
  /** The server ended the connection after the last answer (else it kept it, and the client closed it). */
  readonly ended: boolean;
}

/** A GET asking for a websocket upgrade of `path`, as ws sends it. */
export function upgradeRequest(host: string, path: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`;
}

export function getRequest(host: string, path: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
}

/**
 * Sends each request once the answer to the one before is in, all on one connection to `address`.
 * Resolves after the last answer: at once if the server keeps the connection, when it ends it if it
 * said `Connection: close` (an answer without Content-Length runs to that end, as Go's own 400 does).
 */
export function overOneConnection(address: string, requests: readonly ((host: string) => string)[]): Promise<OneConnection> {
  const { hostname, port, host } = new URL(address);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const answers: RawAnswer[] = [];
    let buffer = Buffer.alloc(0);
    const finish = (ended: boolean): void => {
      socket.destroy();
      resolve({ answers, ended });
    };
    /** The answer at the start of the buffer, if all of it is in (`atEnd`: the server ended the connection). */
    const takeAnswer = (atEnd: boolean): { answer: RawAnswer; closes: boolean } | undefined => {
      const split = buffer.indexOf('\r\n\r\n');
      if (split < 0) return undefined;
      const [statusLine = '', ...lines] = buffer.subarray(0, split).toString('latin1').split('\r\n');
      const headers = new Map(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      const length = headers.get('content-length');
      if (length === undefined && !atEnd) return undefined;
      const end = length === undefined ? buffer.length : split + 4 + Number(length);
      if (buffer.length < end) return undefined;
      const connection = headers.get('connection')?.toLowerCase();
      const answer = { status: Number(statusLine.split(' ')[1]), connection, body: buffer.subarray(split + 4, end).toString('utf8') };
      buffer = buffer.subarray(end);
      return { answer, closes: connection === 'close' };
    };
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (let taken = takeAnswer(false); taken !== undefined; taken = takeAnswer(false)) {
        answers.push(taken.answer);
        const next = requests[answers.length];
        if (taken.closes) return; // the rest is the server's end
        if (next === undefined) return finish(false);
        socket.write(next(host));
      }
    });
    socket.on('end', () => {
      const last = takeAnswer(true);
      if (last !== undefined) answers.push(last.answer);
      finish(true);
    });
    socket.write(requests[0]!(host));
  });
}
