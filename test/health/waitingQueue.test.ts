/**
 * The horizon's queue of waiting allocations (a heap of the waiters themselves, each knowing its
 * place), against a plain model: every request in force, each queued or taken by a round.
 */
import { NOT_WAITING, WaitingQueue, type HorizonWaiter } from '../../src/health/horizon.js';
import { seededRandom } from '../../src/random.js';

interface Modelled {
  due: number;
  seq: number;
  taken: boolean;
}

const byDue = (model: Map<HorizonWaiter, Modelled>) => (a: HorizonWaiter, b: HorizonWaiter): number => {
  const ma = model.get(a) as Modelled;
  const mb = model.get(b) as Modelled;
  return ma.due - mb.due || ma.seq - mb.seq;
};

test('requests, releases and rounds (taken, put back, settled) in random order give what the model gives, in (time, request) order, however often released slots are compacted', () => {
  // Differences collected, asserted once: an expect per step and waiter would make this case minutes long.
  const problems: string[] = [];
  const check = (what: string, got: unknown, want: unknown): void => {
    if (JSON.stringify(got) !== JSON.stringify(want)) problems.push(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  };
  for (let run = 0; run < 200; run++) {
    const random = seededRandom(run + 1);
    const pick = (n: number): number => Math.floor(random() * n);
    const waiters: HorizonWaiter[] = Array.from({ length: 1 + pick(40) }, (_, i) => ({ allocationId: `a${i}`, ...NOT_WAITING }));
    // Released slots wait at the top or are compacted away: after 1, 2 or 3 releases, or rarely.
    const queue = new WaitingQueue<HorizonWaiter>(run % 4 === 3 ? undefined : 1 + (run % 4));
    const model = new Map<HorizonWaiter, Modelled>();
    let seq = 0;
    let taken: HorizonWaiter[] = [];
    for (let step = 0; step < 300; step++) {
      const waiter = waiters[pick(waiters.length)] as HorizonWaiter;
      const op = pick(10);
      if (op < 5) {
        // Few distinct times: equal ones are ordered by request.
        const at = pick(20);
        const known = model.get(waiter);
        check(`run ${run} step ${step} request`, queue.request(waiter, at), known?.due !== at);
        if (known?.due !== at) model.set(waiter, { due: at, seq: ++seq, taken: false });
      } else if (op < 7) {
        queue.release(waiter);
        model.delete(waiter);
      } else if (op < 8) {
        const target = pick(20);
        const due = [...model].filter(([, m]) => !m.taken && m.due <= target).map(([w]) => w).sort(byDue(model));
        taken = queue.takeDue(target);
        check(`run ${run} step ${step} takeDue`, taken.map((w) => w.allocationId), due.map((w) => w.allocationId));
        for (const w of taken) (model.get(w) as Modelled).taken = true;
      } else if (op < 9) {
        queue.putBack(taken);
        for (const w of taken) {
          const m = model.get(w);
          if (m?.taken) m.taken = false;
        }
        taken = [];
      } else {
        const settled = taken.filter((w) => model.get(w)?.taken === true);
        check(`run ${run} step ${step} settle`, queue.settle(taken).map((w) => w.allocationId), settled.map((w) => w.allocationId));
        for (const w of settled) model.delete(w);
        taken = [];
      }
      const earliest = [...model].filter(([, m]) => !m.taken).map(([w]) => w).sort(byDue(model))[0];
      check(`run ${run} step ${step} earliest`, queue.earliest()?.allocationId, earliest?.allocationId);
      // A waiter's own fields say what the model says: in force (queued or taken) or not.
      check(`run ${run} step ${step} dues`, waiters.map((w) => w.horizonDue ?? null), waiters.map((w) => model.get(w)?.due ?? null));
      // Queued or not, as the model says (taken and released ones are out of the heap).
      check(`run ${run} step ${step} queued`, waiters.map((w) => w.horizonSlot >= 0), waiters.map((w) => model.get(w)?.taken === false));
    }
  }
  expect(problems.slice(0, 5)).toEqual([]);
});

test('clear empties the queue and leaves no waiter marked as waiting', () => {
  const waiters: HorizonWaiter[] = ['a', 'b', 'c'].map((allocationId) => ({ allocationId, ...NOT_WAITING }));
  const queue = new WaitingQueue<HorizonWaiter>();
  waiters.forEach((waiter, i) => queue.request(waiter, 10 - i));
  queue.clear();
  expect(queue.earliest()).toBeUndefined();
  expect(waiters.map((w) => [w.horizonDue, w.horizonSlot])).toEqual([[undefined, -1], [undefined, -1], [undefined, -1]]);
  expect(queue.request(waiters[0] as HorizonWaiter, 10)).toBe(true);
  expect(queue.earliest()).toBe(waiters[0]);
});
