import { createActor, createMachine } from 'xstate';
import { interval, retry, throwError, timer, defer, delay, of } from 'rxjs';
import { VirtualClock, VirtualClockRunawayError, schedulerFor } from '../../src/clock/index.js';

describe('VirtualClock', () => {
  it('fires due timers in time order, ties in scheduling order', () => {
    const clock = new VirtualClock();
    const order: string[] = [];
    clock.setTimeout(() => order.push('b@20'), 20);
    clock.setTimeout(() => order.push('a@10'), 10);
    clock.setTimeout(() => order.push('c@20'), 20);
    clock.setTimeout(() => order.push('d@0'), 0);
    expect(clock.advance(19)).toBe(2);
    expect(order).toEqual(['d@0', 'a@10']);
    expect(clock.now()).toBe(19);
    clock.advance(1);
    expect(order).toEqual(['d@0', 'a@10', 'b@20', 'c@20']);
  });

  it('fires a timer armed by a firing timer within the same advance, at its own time', () => {
    const clock = new VirtualClock({ start: 1000 });
    const seen: number[] = [];
    clock.setTimeout(() => {
      seen.push(clock.now());
      clock.setTimeout(() => seen.push(clock.now()), 30);
    }, 50);
    clock.advance(100);
    expect(seen).toEqual([1050, 1080]);
    expect(clock.now()).toBe(1100);
  });

  it('leaves a timer armed past the window for later', () => {
    const clock = new VirtualClock();
    const seen: number[] = [];
    clock.setTimeout(() => clock.setTimeout(() => seen.push(clock.now()), 80), 50);
    clock.advance(100);
    expect(seen).toEqual([]);
    expect(clock.pending()).toBe(1);
    expect(clock.nextDue()).toBe(130);
    clock.advanceTo(130);
    expect(seen).toEqual([130]);
  });

  it('never fires cancelled timers, including ones cancelled by an earlier timer in the same advance', () => {
    const clock = new VirtualClock();
    const fired: string[] = [];
    const a = clock.setTimeout(() => fired.push('a'), 10);
    const b = clock.setTimeout(() => fired.push('b'), 30);
    clock.setTimeout(() => clock.clearTimeout(b), 20);
    clock.clearTimeout(a);
    expect(clock.pending()).toBe(2);
    clock.advance(100);
    expect(fired).toEqual([]);
    expect(clock.pending()).toBe(0);
  });

  it('fires 100,000 timers due in one advance without recursion, in order', () => {
    const clock = new VirtualClock();
    const n = 100_000;
    let last = -1;
    let inOrder = true;
    let count = 0;
    for (let i = 0; i < n; i++) {
      const due = (i * 7919) % n; // a permutation of 0..n-1
      clock.setTimeout(() => {
        if (clock.now() < last) inOrder = false;
        last = clock.now();
        count++;
      }, due);
    }
    expect(clock.advance(n)).toBe(n);
    expect(count).toBe(n);
    expect(inOrder).toBe(true);
  });

  it('runUntilIdle jumps to each timer and reports runaway periodic work', () => {
    const clock = new VirtualClock();
    const seen: number[] = [];
    clock.setTimeout(() => seen.push(clock.now()), 5000);
    clock.setTimeout(() => seen.push(clock.now()), 10);
    expect(clock.runUntilIdle()).toBe(2);
    expect(seen).toEqual([10, 5000]);
    const rearm = (): void => void clock.setTimeout(rearm, 1);
    rearm();
    expect(() => clock.runUntilIdle(1000)).toThrow(VirtualClockRunawayError);
  });

  it('refuses to go back in time', () => {
    const clock = new VirtualClock({ start: 100 });
    expect(() => clock.advanceTo(50)).toThrow(RangeError);
    expect(() => clock.advance(-1)).toThrow(RangeError);
  });

  it('drives XState delayed transitions and RxJS timers interleaved on one timeline', () => {
    const clock = new VirtualClock();
    const scheduler = schedulerFor(clock);
    const log: string[] = [];
    const machine = createMachine({
      initial: 'a',
      states: {
        a: { entry: () => log.push(`xstate a@${clock.now()}`), after: { 150: 'b' } },
        b: { entry: () => log.push(`xstate b@${clock.now()}`), after: { 100: 'c' } },
        c: { entry: () => log.push(`xstate c@${clock.now()}`), type: 'final' },
      },
    });
    const actor = createActor(machine, { clock }).start();
    const sub = interval(100, scheduler).subscribe((i) => log.push(`rxjs ${i}@${clock.now()}`));
    timer(250, scheduler).subscribe(() => log.push(`rxjs timer@${clock.now()}`));
    clock.advance(300);
    sub.unsubscribe();
    expect(log).toEqual([
      'xstate a@0',
      'rxjs 0@100',
      'xstate b@150',
      'rxjs 1@200',
      // Both due at 250: the RxJS timer was armed at 0, XState's at 150, so the RxJS one goes first.
      'rxjs timer@250',
      'xstate c@250',
      'rxjs 2@300',
    ]);
    expect(actor.getSnapshot().status).toBe('done');
    expect(clock.pending()).toBe(0);
  });

  it('runs RxJS retry back-off and delay on the clock', () => {
    const clock = new VirtualClock();
    const scheduler = schedulerFor(clock);
    const attempts: number[] = [];
    const values: number[] = [];
    defer(() => {
      attempts.push(clock.now());
      return attempts.length < 4 ? throwError(() => new Error('down')) : of(42);
    })
      .pipe(
        retry({ delay: (_error, n) => timer(100 * 2 ** (n - 1), scheduler) }),
        delay(5, scheduler),
      )
      .subscribe((v) => values.push(clock.now(), v));
    clock.advance(10_000);
    expect(attempts).toEqual([0, 100, 300, 700]);
    expect(values).toEqual([705, 42]);
  });

  it('gives one scheduler per clock and reports the clock time', () => {
    const clock = new VirtualClock({ start: 42 });
    expect(schedulerFor(clock)).toBe(schedulerFor(clock));
    expect(schedulerFor(clock).now()).toBe(42);
  });
});
