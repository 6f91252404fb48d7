/**
 * ConsulClient: the one Consul call Warden makes, over the same undici transport as the Nomad
 * client (its pool, TLS, time limits on the injected clock), with Consul's token header and
 * X-Consul-* query meta.
 *
 * Why /v1/health/state/any: it is the only blocking endpoint that returns every check of the
 * datacenter in one answer, and each HealthCheck carries what the mapping needs: ServiceID (which
 * names the allocation and task, as Nomad builds it), ServiceName, the check's Name and Status,
 * and CheckID (Nomad's own checks are `_nomad-check-…`). /v1/health/service/<name> would need one
 * query per service; /v1/agent/checks (what Nomad's client polls) covers one agent and cannot block.
 */
import { map, share, type Observable } from 'rxjs';
import { systemClock, type Clock } from '../clock/index.js';
import type { BackoffOptions } from '../nomad/backoff.js';
import { watchQuery } from '../nomad/blockingQuery.js';
import { NomadTransport, type NomadResponse } from '../nomad/transport.js';
import type { WireLayer } from '../nomad/wire.js';
import type { ConsulConfig } from './config.js';
import { ConsulUnavailableError, consulErrorFrom, isConsulError, type ConsulError } from './errors.js';

/** One check as /v1/health/* reports it (consul api/health.go HealthCheck); unknown fields kept. */
export interface ConsulHealthCheck {
  Node: string;
  CheckID: string;
  Name: string;
  /** passing, warning or critical. */
  Status: string;
  Notes?: string;
  Output?: string;
  /** "" for node checks. */
  ServiceID: string;
  ServiceName: string;
  ServiceTags?: string[] | null;
  Type?: string;
  Namespace?: string;
  CreateIndex?: number;
  ModifyIndex?: number;
  [field: string]: unknown;
}

/** `{ body, meta }`, meta.lastIndex being X-Consul-Index. */
export type ConsulResponse<T> = NomadResponse<T>;

export interface ConsulClientOptions {
  clock?: Clock;
  /** Time limit of a non-blocking request, ms (default 60 s). */
  timeoutMs?: number;
  /** Ask for gzip (default true). */
  gzip?: boolean;
  /** Wraps or replaces the network (recording, replay): see NomadTransportOptions.wire. */
  wire?: WireLayer;
  /** Back-off of watchHealthChecks when its call gives none (a replay's recorded jitter). */
  backoff?: BackoffOptions;
}

export interface HealthChecksOptions {
  /** Block until the checks' index passes this (X-Consul-Index of the previous answer). */
  index?: number;
  /** How long Consul may block, ms (Consul's default 5 min, maximum 10 min). */
  waitMs?: number;
  signal?: AbortSignal;
}

export interface ConsulChecksUpdate {
  /** X-Consul-Index of the answer. */
  readonly index: number;
  readonly checks: readonly ConsulHealthCheck[];
  /** Clock time the answer arrived: when Warden saw these checks (a replay gives it back exactly). */
  readonly receivedAt: number;
}

export interface WatchHealthChecksOptions {
  /** Wait of each blocking query, ms (default 5 min). */
  waitMs?: number;
  backoff?: BackoffOptions;
  /** Told of every failed query before its back-off (to log it); the watch keeps going. */
  onError?: (error: ConsulError) => void;
}

const HEALTH_CHECKS_PATH = '/v1/health/state/any';
const DEFAULT_WAIT_MS = 300_000;
/** Consul holds an answer up to wait + wait/16 of jitter; beyond that and this slack it is lost. */
const BLOCKING_SLACK_MS = 10_000;

export class ConsulClient {
  readonly transport: NomadTransport;
  /** Time limits, waits and back-off all run on it. */
  readonly clock: Clock;
  private readonly backoff: BackoffOptions | undefined;

  constructor(
    readonly config: ConsulConfig,
    options: ConsulClientOptions = {},
  ) {
    // The transport's own namespace, region and token are Nomad's: only the address and TLS apply.
    this.clock = options.clock ?? systemClock;
    this.backoff = options.backoff;
    const endpoint = { address: config.address, ...(config.tls === undefined ? {} : { tls: config.tls }) };
    this.transport = new NomadTransport(endpoint, {
      clock: this.clock,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      gzip: options.gzip ?? true,
      connections: 4,
      headers: config.token === undefined ? {} : { 'x-consul-token': config.token },
      metaHeaderPrefix: 'x-consul-',
      ...(options.wire === undefined ? {} : { wire: options.wire }),
    });
  }

  /** Every check of the datacenter (GET /v1/health/state/any), blocking when `index` is set. */
  async healthChecks(options: HealthChecksOptions = {}): Promise<ConsulResponse<ConsulHealthCheck[]>> {
    const { index, waitMs, signal } = options;
    const blocking = index !== undefined && index > 0;
    const query = {
      dc: this.config.datacenter,
      ns: this.config.namespace,
      index: blocking ? index : undefined,
      wait: blocking && waitMs !== undefined ? `${Math.ceil(waitMs)}ms` : undefined,
    };
    const timeoutMs = blocking ? (waitMs ?? DEFAULT_WAIT_MS) * (17 / 16) + BLOCKING_SLACK_MS : undefined;
    try {
      const response = await this.transport.request<unknown>('GET', HEALTH_CHECKS_PATH, {
        query,
        ...(signal === undefined ? {} : { signal }),
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      });
      if (!Array.isArray(response.body)) {
        throw new ConsulUnavailableError('decode', `Consul GET ${HEALTH_CHECKS_PATH}: the answer is not a list of checks`);
      }
      return { body: response.body as ConsulHealthCheck[], meta: response.meta };
    } catch (error) {
      throw consulErrorFrom(error, 'GET', HEALTH_CHECKS_PATH);
    }
  }

  /**
   * The datacenter's checks as an Observable: the first answer, then one per change of
   * X-Consul-Index, one blocking query outstanding at a time whoever subscribes (shared). Failures
   * back off on the clock and retry; an index going backwards (a restored cluster) starts over.
   */
  watchHealthChecks(options: WatchHealthChecksOptions = {}): Observable<ConsulChecksUpdate> {
    const waitMs = options.waitMs ?? DEFAULT_WAIT_MS;
    const backoff = options.backoff ?? this.backoff;
    const query = (index: number, signal: AbortSignal): Promise<ConsulResponse<ConsulHealthCheck[]>> =>
      this.healthChecks({ index, waitMs, signal }).catch((error: unknown) => {
        if (isConsulError(error)) options.onError?.(error);
        throw error;
      });
    return watchQuery(query, {
      clock: this.clock,
      retryable: isConsulError,
      ...(backoff === undefined ? {} : { backoff }),
    }).pipe(
      map((response) => ({ index: response.meta.lastIndex, checks: response.body, receivedAt: response.receivedAt ?? this.clock.now() })),
      share(),
    );
  }

  async close(): Promise<void> {
    await this.transport.close();
  }
}
