/**
 * Driving a VirtualClock over real sockets deterministically: time moves only once every part
 * that talks over loopback has gone quiet, so what happens at one virtual instant is done before
 * the next begins, however slow or loaded the machine is.
 *
 * Each part gives a QuietProbe: a signature of its progress (requests, bytes) and whether it still
 * has bytes queued. The parts are quiet when, for a few event-loop turns in a row (each turn polls
 * the sockets), no signature moved, nothing is queued, and every request a client sent has reached
 * its server. A request parked on purpose (a blocking query waiting on the clock) counts as arrived.
 */
import type { Socket } from 'node:net';
import { tapResponse, type NomadWire, type WireLayer, type WireRequest, type WireResponse } from '../nomad/wire.js';
import type { VirtualClock } from '../clock/virtualClock.js';

export interface QuietProbe {
  /** Changes whenever the part makes progress. */
  signature(): string;
  /** Work it has queued (bytes not yet handed to the kernel). */
  busy(): boolean;
}

/** A server's side: requests received, bytes written, bytes still queued (FakeNomad and FakeConsul keep one). */
export class ServerActivity implements QuietProbe {
  requests = 0;
  private readonly sockets = new Set<Socket>();
  private written = 0;

  /** `working`: whether the server has work of its own under way (FakeNomad: commands its exec runs). */
  constructor(private readonly working: () => boolean = () => false) {}

  /** Counts what goes through a new connection. */
  watch(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => {
      this.written += socket.bytesWritten;
      this.sockets.delete(socket);
    });
  }

  signature(): string {
    let written = this.written;
    for (const socket of this.sockets) written += socket.bytesWritten;
    return `${this.requests}/${written}`;
  }

  busy(): boolean {
    for (const socket of this.sockets) if (socket.writableLength > 0) return true;
    return this.working();
  }
}

/** A client's side, as a wire layer: requests sent, refused before reaching a server, and bytes received. */
export class WireTally implements QuietProbe {
  sent = 0;
  /** Sent but never answered: refused, reset, aborted before the answer's head. */
  failed = 0;
  private received = 0;
  private settled = 0;

  /** The layer to give NomadClient (`wire`) or NomadTransport. */
  readonly layer: WireLayer = (network) => this.wrap(network);

  signature(): string {
    return `${this.sent}/${this.failed}/${this.settled}/${this.received}`;
  }

  busy(): boolean {
    return false;
  }

  private wrap(network: NomadWire): NomadWire {
    return {
      send: async (request: WireRequest): Promise<WireResponse> => {
        this.sent++;
        let response: WireResponse;
        try {
          response = await network.send(request);
        } catch (error) {
          this.failed++;
          throw error;
        }
        return this.counted(response);
      },
      close: () => network.close(),
    };
  }

  private counted(response: WireResponse): WireResponse {
    return tapResponse(response, {
      text: (text) => {
        this.received += text.length;
      },
      chunk: (chunk) => {
        this.received += chunk.length;
      },
      end: () => {
        this.settled++;
      },
    });
  }
}

export interface QuietDriverOptions {
  /** The parts that talk over loopback. */
  readonly probes: readonly QuietProbe[];
  /** True when every request sent has reached its server (e.g. tally.sent − tally.failed === server.requests). */
  readonly arrived?: () => boolean;
  /** Turns in a row with nothing moving that count as quiet (default 3). */
  readonly turns?: number;
  /** Turns after which it gives up waiting and goes on (default 2,000): never a hang. */
  readonly maxTurns?: number;
}

function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** One server and the client that talks to it: a part of a QuietDriver. */
export interface QuietPair {
  readonly server: ServerActivity;
  readonly client: WireTally;
}

export class QuietDriver {
  private readonly pairs = new Set<QuietPair>();

  constructor(
    readonly clock: VirtualClock,
    private readonly options: QuietDriverOptions = { probes: [] },
  ) {}

  /** Adds a server and its client (a fake cluster started later); returns the function that removes them. */
  add(pair: QuietPair): () => void {
    this.pairs.add(pair);
    return () => this.pairs.delete(pair);
  }

  /** Waits until the parts are quiet; true if they were, false if it gave up. */
  async quiet(): Promise<boolean> {
    const { turns = 3, maxTurns = 2_000 } = this.options;
    const pairs = [...this.pairs];
    const probes = [...this.options.probes, ...pairs.flatMap((pair) => [pair.server, pair.client])];
    const given = this.options.arrived ?? (() => true);
    const arrived = (): boolean => given() && pairs.every((pair) => pair.client.sent - pair.client.failed === pair.server.requests);
    let last = '';
    let still = 0;
    for (let i = 0; i < maxTurns; i++) {
      await turn();
      const signature = probes.map((probe) => probe.signature()).join('|');
      const settled = arrived() && !probes.some((probe) => probe.busy());
      still = settled && signature === last ? still + 1 : 0;
      if (still >= turns) return true;
      last = signature;
    }
    return false;
  }

  /** Moves the clock to `until`, from one due timer to the next, quiet before and after each. */
  async advanceTo(until: number, onStep?: (to: number) => Promise<void> | void): Promise<void> {
    for (;;) {
      await this.quiet();
      const now = this.clock.now();
      if (now >= until) return;
      const due = this.clock.nextDue();
      const next = due === undefined || due > until ? until : Math.max(due, now);
      await onStep?.(next);
      this.clock.advanceTo(next);
    }
  }
}
