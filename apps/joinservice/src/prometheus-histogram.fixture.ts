/**
 * A quantile of a Prometheus histogram read from its text exposition: the upper bound of the
 * first bucket whose cumulative count reaches `q` of all observations (what the buckets allow
 * one to say: "at most this"). Infinity when only the `+Inf` bucket reaches it; undefined when
 * the histogram is absent or has no observations.
 */
export function histogramQuantile(exposition: string, name: string, q: number): number | undefined {
  if (!(q > 0 && q <= 1)) throw new RangeError(`q must be in (0, 1], got ${q}`);
  const buckets: { le: number; count: number }[] = [];
  const bucketLine = new RegExp(`^${name}_bucket\\{(?:.*,)?le="([^"]+)"(?:,.*)?\\} (\\d+(?:\\.\\d+)?)$`);
  for (const line of exposition.split('\n')) {
    const match = bucketLine.exec(line);
    if (match === null) continue;
    const [, le = '', count = ''] = match;
    buckets.push({ le: le === '+Inf' ? Infinity : Number(le), count: Number(count) });
  }
  buckets.sort((a, b) => a.le - b.le);
  const total = buckets.at(-1)?.count ?? 0;
  if (total === 0) return undefined;
  return buckets.find((bucket) => bucket.count >= q * total)?.le;
}
