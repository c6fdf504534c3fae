import { describe, expect, it } from 'vitest';
import { parseKubernetesVersion } from './kubernetes-version.js';
import { kubeletSkewProblem, kubeletWithinSkew } from './version-skew.js';

const v = (text: string) => parseKubernetesVersion(text, 'the test');

describe("Kubernetes' version-skew policy for the kubelet", () => {
  it('lets a kubelet run up to three minors older than the API server, of any patch', () => {
    for (const kubelet of ['v1.37.2', 'v1.37.0', 'v1.37.9', 'v1.36.4', 'v1.35.0', 'v1.34.12', 'v1.37.0-rc.1']) {
      expect(kubeletWithinSkew(v(kubelet), v('v1.37.2')), kubelet).toBe(true);
    }
  });

  it('refuses a kubelet newer than the API server, saying so', () => {
    expect(kubeletSkewProblem(v('v1.38.0'), v('v1.37.2'))).toBe(
      'a v1.38 kubelet must not be newer than the v1.37 API server',
    );
    expect(kubeletWithinSkew(v('v1.38.0-alpha.1'), v('v1.37.9'))).toBe(false);
  });

  it('refuses a kubelet more than three minors older, naming how many', () => {
    expect(kubeletSkewProblem(v('v1.33.9'), v('v1.37.2'))).toBe(
      'a v1.33 kubelet is 4 minor versions older than the v1.37 API server (at most 3)',
    );
    expect(kubeletWithinSkew(v('v1.32.9'), v('v1.37.0'))).toBe(false);
  });

  it('refuses another major version', () => {
    expect(kubeletSkewProblem(v('v2.0.0'), v('v1.37.2'))).toBe(
      'a v2.0 kubelet cannot run against a v1.37 API server (another major version)',
    );
    expect(kubeletWithinSkew(v('v1.37.2'), v('v2.0.0'))).toBe(false);
  });
});
