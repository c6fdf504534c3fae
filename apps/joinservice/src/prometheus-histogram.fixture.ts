/** Label values a series must carry to be counted (others may be there too). */
export type LabelFilter = Readonly<Record<string, string>>;

/**
 * A histogram's cumulative buckets, summed over every series of `name` that carries `labels`
 * (kube-apiserver keeps one series per verb, resource, scope, component, ...), by bound.
 */
function buckets(exposition: string, name: string, labels: LabelFilter): { le: number; count: number }[] {
  const byBound = new Map<number, number>();
  const bucketLine = new RegExp(`^${name}_bucket\\{(.*)\\} (\\d+(?:\\.\\d+)?(?:e[+-]?\\d+)?)$`);
  for (const line of exposition.split('\n')) {
    const match = bucketLine.exec(line);
    if (match === null) continue;
    const [, labelText = '', count = ''] = match;
    const series = new Map([...labelText.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1] ?? '', m[2] ?? '']));
    if (Object.entries(labels).some(([key, value]) => series.get(key) !== value)) continue;
    const le = series.get('le');
    if (le === undefined) continue;
    const bound = le === '+Inf' ? Infinity : Number(le);
    byBound.set(bound, (byBound.get(bound) ?? 0) + Number(count));
  }
  return [...byBound].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
}

/**
 * A quantile of a Prometheus histogram read from its text exposition: the upper bound of the
 * first bucket whose cumulative count reaches `q` of all observations (what the buckets allow
 * one to say: "at most this"). Infinity when only the `+Inf` bucket reaches it; undefined when
 * the histogram is absent or has no observations. With `labels`, only the series that carry
 * them, summed.
 */
export function histogramQuantile(
  exposition: string,
  name: string,
  q: number,
  labels: LabelFilter = {},
): number | undefined {
  if (!(q > 0 && q <= 1)) throw new RangeError(`q must be in (0, 1], got ${q}`);
  const cumulative = buckets(exposition, name, labels);
  const total = cumulative.at(-1)?.count ?? 0;
  if (total === 0) return undefined;
  return cumulative.find((bucket) => bucket.count >= q * total)?.le;
}

/** How many observations the histogram's series that carry `labels` hold in all. */
export function histogramCount(exposition: string, name: string, labels: LabelFilter = {}): number {
  return buckets(exposition, name, labels).at(-1)?.count ?? 0;
}
