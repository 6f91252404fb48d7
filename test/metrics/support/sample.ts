/** The value of one sample of the Prometheus text exposition, e.g. `warden_verdicts_total{outcome="healthy"}`. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}
