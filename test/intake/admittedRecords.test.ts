/**
 * The one table of admitted allocations, which the registry keeps its machines in too. It keeps the
 * record it found last (an update asks for its allocation several times): a record admitted anew
 * after a removal is the one found, never the one before.
 */
import { AdmittedRecords, type Admitted } from '../../src/intake/admittedRecords.js';
import type { MachineEntry } from '../../src/health/registry.js';
import type { HealthPolicy } from '../../machines/allocationHealthTypes.js';
import type { TaskGroup } from '../../src/nomad/types.js';

function admitted(allocId: string, jobVersion: number): Admitted {
  return {
    ref: { allocId, name: 'web.app[0]', namespace: 'default', jobId: 'web', taskGroup: 'app', deploymentId: undefined },
    group: { Name: 'app' } as TaskGroup,
    policy: {} as HealthPolicy,
    jobVersion, opening: true, rewatchedFrom: undefined, awaitingNomad: false, nomad: undefined, machine: undefined,
  };
}
const machine = { allocationId: 'a' } as MachineEntry;

test('a record admitted again after its removal is the one found, by any copy of its ID', () => {
  const records = new AdmittedRecords();
  const first = admitted('a', 1);
  records.admit(first);
  expect(records.record('a')).toBe(first);
  expect(records.record(['a'].join(''))).toBe(first);
  records.remove('a');
  expect(records.record('a')).toBeUndefined();
  const second = admitted('a', 2);
  records.admit(second);
  expect(records.record('a')).toBe(second);
  expect(() => records.admit(admitted('a', 3))).toThrow(/admitted already/);
});

test('its machines: counted, found through the record, and a record with one cannot be removed', () => {
  const records = new AdmittedRecords();
  records.admit(admitted('a', 1));
  records.admit(admitted('b', 1));
  expect(records.get('b')).toBeUndefined();
  records.set('a', machine);
  expect(records.size).toBe(1);
  expect(records.has('a')).toBe(true);
  expect(records.get('a')).toBe(machine);
  expect(records.record('b')?.machine).toBeUndefined();
  expect(() => records.remove('a')).toThrow(/still has a machine/);
  expect(records.delete('a')).toBe(true);
  expect(records.delete('a')).toBe(false);
  expect(records.size).toBe(0);
  records.remove('a');
  expect(records.get('a')).toBeUndefined();
  expect(() => records.set('a', machine)).toThrow(/not admitted/);
  expect([...records.all()].map((record) => record.ref.allocId)).toEqual(['b']);
});
