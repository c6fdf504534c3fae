import { describe, expect, it } from 'vitest';
import { histogramCount, histogramQuantile } from './prometheus-histogram.fixture.js';

// As prom-client writes a histogram (cumulative buckets, then +Inf, sum and count).
const EXPOSITION = `# HELP h_seconds a histogram
# TYPE h_seconds histogram
h_seconds_bucket{le="0.01"} 50
h_seconds_bucket{le="0.1"} 90
h_seconds_bucket{le="1"} 99
h_seconds_bucket{le="+Inf"} 100
h_seconds_sum 12.5
h_seconds_count 100
other_seconds_bucket{le="0.01"} 7
`;

describe('histogramQuantile (the storm bench reads the service’s histograms with it)', () => {
  it('answers the upper bound of the first bucket that holds the quantile', () => {
    expect(histogramQuantile(EXPOSITION, 'h_seconds', 0.5)).toBe(0.01);
    expect(histogramQuantile(EXPOSITION, 'h_seconds', 0.9)).toBe(0.1);
    expect(histogramQuantile(EXPOSITION, 'h_seconds', 0.99)).toBe(1);
    expect(histogramQuantile(EXPOSITION, 'h_seconds', 1)).toBe(Infinity);
  });

  it('reads buckets with other labels, and nothing of another histogram', () => {
    const labelled = EXPOSITION.replaceAll('h_seconds_bucket{', 'h_seconds_bucket{kind="join",');
    expect(histogramQuantile(labelled, 'h_seconds', 0.5)).toBe(0.01);
    expect(histogramQuantile(EXPOSITION, 'missing_seconds', 0.5)).toBeUndefined();
    expect(() => histogramQuantile(EXPOSITION, 'h_seconds', 0)).toThrow(RangeError);
  });
});

describe('histogramQuantile over some of the series (the storm bench reads kube-apiserver’s with it)', () => {
  // As kube-apiserver writes apiserver_request_duration_seconds: one series per verb, resource, scope...
  const APISERVER = `apiserver_request_duration_seconds_bucket{component="apiserver",resource="secrets",scope="resource",verb="POST",le="0.005"} 2
apiserver_request_duration_seconds_bucket{component="apiserver",resource="secrets",scope="resource",verb="POST",le="0.05"} 8
apiserver_request_duration_seconds_bucket{component="apiserver",resource="secrets",scope="resource",verb="POST",le="+Inf"} 10
apiserver_request_duration_seconds_bucket{component="apiserver",resource="secrets",scope="namespace",verb="POST",le="0.005"} 0
apiserver_request_duration_seconds_bucket{component="apiserver",resource="secrets",scope="namespace",verb="POST",le="0.05"} 0
apiserver_request_duration_seconds_bucket{component="apiserver",resource="secrets",scope="namespace",verb="POST",le="+Inf"} 10
apiserver_request_duration_seconds_bucket{component="apiserver",resource="secrets",scope="resource",verb="DELETE",le="0.005"} 100
apiserver_request_duration_seconds_bucket{component="apiserver",resource="secrets",scope="resource",verb="DELETE",le="0.05"} 100
apiserver_request_duration_seconds_bucket{component="apiserver",resource="secrets",scope="resource",verb="DELETE",le="+Inf"} 100
`;

  it('sums the buckets of the series that carry the labels, and counts their observations', () => {
    const posts = { verb: 'POST', resource: 'secrets' };
    expect(histogramCount(APISERVER, 'apiserver_request_duration_seconds', posts)).toBe(20);
    expect(histogramQuantile(APISERVER, 'apiserver_request_duration_seconds', 0.4, posts)).toBe(0.05);
    expect(histogramQuantile(APISERVER, 'apiserver_request_duration_seconds', 0.5, posts)).toBe(Infinity);
    expect(histogramQuantile(APISERVER, 'apiserver_request_duration_seconds', 0.5, { verb: 'DELETE' })).toBe(0.005);
    expect(histogramCount(APISERVER, 'apiserver_request_duration_seconds', { verb: 'PATCH' })).toBe(0);
  });
});
