/** Reading decimal numbers straight out of a string, without slicing it: Nomad's times, RFC3339 and integer nanoseconds alike. */

/** The number written by `count` decimal digits of `text` from `start`; NaN if one is not a digit. */
export function digitsAt(text: string, start: number, count: number): number {
  let value = 0;
  for (let i = start; i < start + count; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (!(digit >= 0 && digit <= 9)) return Number.NaN;
    value = value * 10 + digit;
  }
  return value;
}
