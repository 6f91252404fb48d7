/**
 * Writes down what Warden reads, at the transport's boundary: a WireLayer over the network that
 * notes each answer's status, meta headers and body (whole, or chunk by chunk for the event stream)
 * with the time it arrived on the command's clock. What Warden sends is not written beyond method
 * and path: request headers carry the token.
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import type { Clock } from '../../clock/index.js';
import { errorMessage } from '../../errorMessage.js';
import { processRandom } from '../../random.js';
import { scrubSecrets } from '../../secrets.js';
import { tapResponse, type NomadWire, type WireLayer, type WireRequest, type WireResponse } from '../wire.js';
import { RECORDING_FORMAT, RECORDING_VERSION, type RecordingEntry, type RecordingHeader } from './format.js';

export interface TrafficRecorderOptions {
  clock: Clock;
  /** The command being recorded and its settings (no tokens). */
  command: RecordingHeader['command'];
  env: RecordingHeader['env'];
  /** Receives the recording, one line (with its newline) at a time. */
  write: (line: string) => void;
  /** Replaced by `[redacted]` wherever they would be written (the Nomad and Consul tokens). */
  secrets?: readonly (string | undefined)[];
}

/** Response headers worth keeping: the ones Warden reads (the query meta, Retry-After). */
const META_HEADER = /^(x-(nomad|consul)-|retry-after$)/;

function metaHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (META_HEADER.test(name) && value !== undefined) kept[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return kept;
}

type Step = RecordingEntry extends infer E ? (E extends RecordingEntry ? Omit<E, 't'> : never) : never;

export class TrafficRecorder {
  /** Give it as the transports' `wire` (Nomad's and Consul's): they are recorded into one file. */
  readonly layer: WireLayer = (network) => this.wrap(network);
  /** Give it as the back-off jitter source: each draw is noted, for a replay to draw the same. */
  readonly random = (): number => {
    const value = processRandom();
    this.note({ type: 'random', value });
    return value;
  };
  private readonly start: number;
  private nextId = 0;
  private stopped = false;

  constructor(private readonly options: TrafficRecorderOptions) {
    this.start = options.clock.now();
    const header: RecordingHeader = { format: RECORDING_FORMAT, version: RECORDING_VERSION, start: this.start, command: options.command, env: options.env };
    options.write(`${JSON.stringify(header)}\n`);
  }

  /** Writes the end of the recording; nothing is written after it. */
  stop(): void {
    this.note({ type: 'stop' });
    this.stopped = true;
  }

  private note(step: Step): void {
    if (this.stopped) return;
    this.options.write(`${JSON.stringify({ t: this.options.clock.now() - this.start, ...step })}\n`);
  }

  private clean(text: string): string {
    return scrubSecrets(text, this.options.secrets ?? []);
  }

  private wrap(network: NomadWire): NomadWire {
    return {
      send: (request) => this.send(network, request),
      close: async () => undefined,
    };
  }

  private async send(network: NomadWire, request: WireRequest): Promise<WireResponse> {
    const id = ++this.nextId;
    const { origin, method } = request;
    const path = this.clean(request.path);
    let response: WireResponse;
    try {
      response = await network.send(request);
    } catch (error) {
      this.note({ type: 'failure', id, origin, method, path, error: this.clean(errorMessage(error)), ...(request.signal.aborted ? { aborted: true } : {}) });
      throw error;
    }
    this.note({ type: 'response', id, origin, method, path, status: response.statusCode, headers: metaHeaders(response.headers) });
    // Pieces are noted as text: a character cut between two chunks is noted whole with the second.
    const decoder = new StringDecoder('utf8');
    const noteText = (text: string): void => {
      if (text !== '') this.note({ type: 'chunk', id, text: this.clean(text) });
    };
    let chunked = false;
    return tapResponse(response, {
      text: (text) => this.note({ type: 'body', id, text: this.clean(text) }),
      chunk: (chunk) => {
        chunked = true;
        noteText(decoder.write(Buffer.from(chunk)));
      },
      end: ({ error, stopped }) => {
        if (chunked) noteText(decoder.end());
        // A reader that stopped reading (it had what it wanted) stops at the same point in a replay.
        if (stopped) this.note({ type: 'end', id, aborted: true });
        else if (error !== undefined) this.note({ type: 'end', id, error: this.clean(errorMessage(error)), ...(request.signal.aborted ? { aborted: true } : {}) });
        else if (chunked) this.note({ type: 'end', id });
      },
    });
  }
}

/** A recorder writing to a file; `close()` writes the stop and waits for the file to be complete. */
export function recordToFile(path: string, options: Omit<TrafficRecorderOptions, 'write'>): { recorder: TrafficRecorder; close(): Promise<void> } {
  const file = createWriteStream(path, { flags: 'w' });
  const recorder = new TrafficRecorder({ ...options, write: (line) => void file.write(line) });
  return {
    recorder,
    close: async () => {
      recorder.stop();
      file.end();
      await once(file, 'finish');
    },
  };
}
