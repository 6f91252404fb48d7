/**
 * Prometheus metrics of the runner pools and the API (prom-client), added to a registry of the
 * supervisor's own (WardenMetrics.registry) so that one /metrics page serves both: runners per
 * environment and state, pool sizes, claims by outcome, runner startup (Poseidon's startup-duration
 * measurement) as a histogram, executions by outcome with their durations, execution bytes, and
 * API request durations by route, method and status code.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Subscription } from 'rxjs';
import type { RunnerPools } from '../runners/pools.js';
import type { SocketOutcome } from './executionSocket.js';

export type ClaimOutcome = 'claimed' | 'no_idle_runner' | 'unknown_environment' | 'failed';

const STARTUP_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300];
const EXECUTION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900];
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const RUNNER_STATES = ['idle', 'used', 'provisioning'] as const;

export class ApiMetrics {
  private readonly claims: Counter<'environment' | 'outcome'>;
  private readonly startup: Histogram<'environment'>;
  private readonly executions: Histogram<'environment' | 'outcome'>;
  private readonly bytes: Counter<'stream'>;
  private readonly requests: Histogram<'route' | 'method' | 'code'>;
  private readonly pools = new Set<RunnerPools>();
  private readonly subscriptions: Subscription[] = [];

  constructor(registry: Registry) {
    const registers = [registry];
    const pools = this.pools;
    new Gauge({
      name: 'warden_runners',
      help: 'Runners per execution environment and state: idle (the warm pool), used (claimed), provisioning (registered, not running yet)',
      labelNames: ['environment', 'state'],
      registers,
      collect() {
        this.reset();
        for (const each of pools) {
          for (const environment of each.environmentSummaries()) {
            const counts = { idle: environment.idleRunners, used: environment.usedRunners, provisioning: environment.provisioningRunners };
            for (const state of RUNNER_STATES) this.set({ environment: String(environment.id), state }, counts[state]);
          }
        }
      },
    });
    new Gauge({
      name: 'warden_prewarming_pool_size',
      help: 'Idle runners each execution environment keeps (its prewarmingPoolSize)',
      labelNames: ['environment'],
      registers,
      collect() {
        this.reset();
        for (const each of pools) for (const environment of each.environmentSummaries()) this.set({ environment: String(environment.id) }, environment.spec.prewarmingPoolSize);
      },
    });
    this.claims = new Counter({ name: 'warden_runner_claims_total', help: 'Runner claims (POST /runners) by outcome', labelNames: ['environment', 'outcome'], registers });
    this.startup = new Histogram({
      name: 'warden_runner_startup_duration_seconds',
      help: "Time from a runner's allocation pending to running, as Poseidon measures a runner's startup",
      labelNames: ['environment'],
      buckets: STARTUP_BUCKETS,
      registers,
    });
    this.executions = new Histogram({
      name: 'warden_execution_duration_seconds',
      help: 'Executions over the WebSocket API, by outcome (exited, timeout, error, client_closed, shutdown), from connection to end',
      labelNames: ['environment', 'outcome'],
      buckets: EXECUTION_BUCKETS,
      registers,
    });
    this.bytes = new Counter({ name: 'warden_execution_bytes_total', help: 'Bytes through executions over the WebSocket API, by stream', labelNames: ['stream'], registers });
    for (const stream of ['stdin', 'stdout', 'stderr']) this.bytes.inc({ stream }, 0);
    this.requests = new Histogram({
      name: 'warden_api_request_duration_seconds',
      help: 'API requests by route (its pattern), method and status code, until the answer is written (a WebSocket: until its upgrade)',
      labelNames: ['route', 'method', 'code'],
      buckets: REQUEST_BUCKETS,
      registers,
    });
  }

  /** Counts the pools' runners and startups from now on. */
  observe(pools: RunnerPools): void {
    this.pools.add(pools);
    this.subscriptions.push(
      pools.startups$.subscribe({
        next: ({ environmentId, startupMs }) => this.startup.observe({ environment: String(environmentId) }, startupMs / 1000),
        complete: () => this.pools.delete(pools),
      }),
    );
  }

  claim(environmentId: number, outcome: ClaimOutcome): void {
    this.claims.inc({ environment: String(environmentId), outcome });
  }

  execution(environmentId: number, outcome: SocketOutcome, durationMs: number): void {
    this.executions.observe({ environment: String(environmentId), outcome }, durationMs / 1000);
  }

  executionBytes(stream: 'stdin' | 'stdout' | 'stderr', bytes: number): void {
    this.bytes.inc({ stream }, bytes);
  }

  request(route: string, method: string, code: number, durationMs: number): void {
    this.requests.observe({ route, method, code: String(code) }, durationMs / 1000);
  }

  close(): void {
    for (const subscription of this.subscriptions.splice(0)) subscription.unsubscribe();
    this.pools.clear();
  }
}
