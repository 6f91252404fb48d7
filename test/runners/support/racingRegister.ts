/**
 * Nomad's order of a register with EnforceIndex (nomad/job_endpoint.go Register): the index is
 * checked against the state store first, the write applied through raft after. A purge of the same
 * job applied in between is not seen by the check, and the register then re-creates the purged job
 * at version 0 (measured on a real 1.1.2: about half of such pairs). FakeNomad checks and applies
 * in one step, so this wire layer on the client plays Nomad's order: a register that passes its
 * check against the fake's job is held (its check done) until the test releases it, then sent on
 * without EnforceIndex (its apply), whatever happened to the job meanwhile.
 */
import type { NomadWire, WireLayer, WireRequest, WireResponse } from '../../../src/nomad/wire.js';
import type { FakeNomad } from '../../../src/testing/fakeNomad.js';

export interface HeldRegister {
  /** Resolves once a matching register passed its check and is held. */
  readonly held: Promise<void>;
  /** Sends the held register on, as applied now. */
  release(): void;
}

export interface RacingRegister {
  layer: WireLayer;
  /** Holds the next register with EnforceIndex of `jobId` that passes its check. */
  holdNext(jobId: string): HeldRegister;
}

interface RegisterBody {
  Job?: { ID?: string };
  EnforceIndex?: boolean;
  JobModifyIndex?: number;
}

export function racingRegister(fake: FakeNomad): RacingRegister {
  const armed = new Map<string, { held: () => void; released: Promise<void> }>();
  const layer: WireLayer = (network: NomadWire): NomadWire => ({
    close: () => network.close(),
    async send(request: WireRequest): Promise<WireResponse> {
      if (request.method !== 'PUT' || !request.path.startsWith('/v1/jobs') || request.body === null) return network.send(request);
      const body = JSON.parse(request.body) as RegisterBody;
      const jobId = body.Job?.ID ?? '';
      const plan = armed.get(jobId);
      const current = fake.cluster.job(jobId);
      if (plan === undefined || body.EnforceIndex !== true || current?.JobModifyIndex !== body.JobModifyIndex) return network.send(request);
      armed.delete(jobId);
      plan.held();
      await plan.released;
      const { EnforceIndex: _check, JobModifyIndex: _index, ...applied } = body;
      return network.send({ ...request, body: JSON.stringify(applied) });
    },
  });
  return {
    layer,
    holdNext(jobId) {
      let held: () => void = () => undefined;
      let release: () => void = () => undefined;
      const heldPromise = new Promise<void>((resolve) => (held = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      armed.set(jobId, { held, released });
      return { held: heldPromise, release };
    },
  };
}
