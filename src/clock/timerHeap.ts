/** Something due at a time; `seq` breaks ties: equal due times come out in the order they went in. */
export interface Due {
  readonly due: number;
  readonly seq: number;
}

/** A timer waiting in a VirtualClock. */
export interface HeapTimer extends Due {
  readonly callback: () => void;
}

function before(a: Due, b: Due): boolean {
  return a.due < b.due || (a.due === b.due && a.seq < b.seq);
}

/** Binary min-heap on (due, seq): O(log n) push and pop, no recursion. */
export class TimerHeap<T extends Due = HeapTimer> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(timer: T): void {
    const items = this.items;
    let i = items.push(timer) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent]!;
      if (!before(timer, p)) break;
      items[i] = p;
      i = parent;
    }
    items[i] = timer;
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    const n = items.length;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && before(items[right]!, items[left]!) ? right : left;
      if (!before(items[child]!, last)) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = last;
    return top;
  }

  clear(): void {
    this.items.length = 0;
  }
}
