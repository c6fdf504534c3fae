import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadInitConfig } from './config-load.js';
import { ConfigError } from './config-schema.js';

// What `kubeadm init --config` does with each document of its file, by group, version and kind:
// cmd/kubeadm/app/util/config/initconfiguration.go documentMapToInitConfiguration (with
// common.go validateSupportedVersion, strict/strict.go VerifyUnmarshalStrict and
// componentconfigs/configset.go FetchFromDocumentMap), Kubernetes 1.32.

const API = 'kubeadm.k8s.io/v1beta4';
const INIT = {
  apiVersion: API,
  kind: 'InitConfiguration',
  nodeRegistration: { name: 'cp-0', criSocket: 'unix:///run/containerd/containerd.sock' },
  localAPIEndpoint: { advertiseAddress: '10.0.0.1', bindPort: 6443 },
};
const CLUSTER = { apiVersion: API, kind: 'ClusterConfiguration', kubernetesVersion: 'v1.32.9' };

const file = (...docs: Record<string, unknown>[]): string => docs.map((d) => stringify(d)).join('---\n');

/** Loads an init file; the warnings klog would print, without their "W1125 10:11:12.123456 pid " head. */
function load(text: string): { warnings: string[]; config: ReturnType<typeof loadInitConfig> } {
  const warnings: string[] = [];
  const config = loadInitConfig(text, (line) => warnings.push(line.replace(/^W\d{4} [\d:.]+ +\d+ /, '')));
  return { warnings, config };
}

function refusal(text: string): { message: string; warnings: string[] } {
  const warnings: string[] = [];
  try {
    loadInitConfig(text, (line) => warnings.push(line.replace(/^W\d{4} [\d:.]+ +\d+ /, '')));
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return { message: (err as Error).message, warnings };
  }
  throw new Error('expected a ConfigError');
}

describe('documents init does not read are warned about and skipped', () => {
  it('an unknown group: VerifyUnmarshalStrict\'s "unknown configuration" (a warning at init), then "Ignored"', () => {
    const { warnings, config } = load(file(INIT, CLUSTER, { apiVersion: 'example.com/v1', kind: 'Widget', a: 1 }));
    expect(config.init.nodeRegistration.name).toBe('cp-0');
    expect(warnings).toEqual([
      'initconfiguration.go:306] unknown configuration schema.GroupVersionKind{Group:"example.com", Version:"v1", Kind:"Widget"}',
      'initconfiguration.go:361] [config] WARNING: Ignored YAML document with GroupVersionKind example.com/v1, Kind=Widget',
    ]);
  });

  it("kubeadm's own group with a kind it does not register: the same two warnings, not an error", () => {
    const { warnings } = load(file(INIT, CLUSTER, { apiVersion: API, kind: 'NodeConfiguration' }));
    expect(warnings).toEqual([
      'initconfiguration.go:306] unknown configuration schema.GroupVersionKind{Group:"kubeadm.k8s.io", Version:"v1beta4", Kind:"NodeConfiguration"}',
      'initconfiguration.go:361] [config] WARNING: Ignored YAML document with GroupVersionKind kubeadm.k8s.io/v1beta4, Kind=NodeConfiguration',
    ]);
  });

  it('a known kind init does not read (JoinConfiguration): checked strictly, problems only logged, then "Ignored"', () => {
    const join = { apiVersion: API, kind: 'JoinConfiguration', discovery: {} };
    const ignored =
      'initconfiguration.go:361] [config] WARNING: Ignored YAML document with GroupVersionKind kubeadm.k8s.io/v1beta4, Kind=JoinConfiguration';
    expect(load(file(INIT, CLUSTER, { ...join, surprise: true })).warnings).toEqual([
      'initconfiguration.go:306] error unmarshaling configuration schema.GroupVersionKind{Group:"kubeadm.k8s.io", Version:"v1beta4", Kind:"JoinConfiguration"}: strict decoding error: unknown field "surprise"',
      ignored,
    ]);
    // A wrong type, which ends a join, is only logged by init (strictErrors is false there).
    const { warnings } = load(file(INIT, CLUSTER, { ...join, skipPhases: 'all' }));
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(
      /^initconfiguration\.go:306\] error unmarshaling configuration schema\.GroupVersionKind\{Group:"kubeadm\.k8s\.io", Version:"v1beta4", Kind:"JoinConfiguration"\}: JoinConfiguration: strict decoding error: skipPhases: /,
    );
    expect(warnings[1]).toBe(ignored);
  });

  it('the documents are taken in the order of their GVK strings (sorted, so ClusterConfiguration first)', () => {
    const { warnings } = load(
      file({ apiVersion: 'zeta.example/v1', kind: 'Z' }, INIT, { apiVersion: 'alpha.example/v1', kind: 'A' }, CLUSTER),
    );
    expect(warnings.filter((w) => w.includes('Ignored'))).toEqual([
      'initconfiguration.go:361] [config] WARNING: Ignored YAML document with GroupVersionKind alpha.example/v1, Kind=A',
      'initconfiguration.go:361] [config] WARNING: Ignored YAML document with GroupVersionKind zeta.example/v1, Kind=Z',
    ]);
  });

  it('skipped documents do not count as configuration: without Init- or ClusterConfiguration init refuses', () => {
    const none = 'no InitConfiguration or ClusterConfiguration kind was found in the YAML file';
    expect(refusal(file({ apiVersion: 'example.com/v1', kind: 'Widget' })).message).toBe(none);
    // The stand-in used to default both when the file held only a KubeletConfiguration, or nothing.
    expect(refusal(file({ apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration' })).message).toBe(
      none,
    );
    expect(refusal('').message).toBe(none);
  });
});

describe('documents init refuses', () => {
  it('InitConfiguration or ClusterConfiguration in a version kubeadm does not have: the decoder finds no such kind', () => {
    const { message, warnings } = refusal(file({ ...INIT, apiVersion: 'kubeadm.k8s.io/v1beta9' }, CLUSTER));
    expect(message).toBe(
      'no kind "InitConfiguration" is registered for version "kubeadm.k8s.io/v1beta9" in scheme "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme/scheme.go:31"',
    );
    expect(warnings).toEqual([
      'initconfiguration.go:306] unknown configuration schema.GroupVersionKind{Group:"kubeadm.k8s.io", Version:"v1beta9", Kind:"InitConfiguration"}',
    ]);
    // GroupVersionKindsHasClusterConfiguration matches the kind alone: another group is no escape.
    expect(refusal(file(INIT, { ...CLUSTER, apiVersion: 'example.com/v1' })).message).toBe(
      'no kind "ClusterConfiguration" is registered for version "example.com/v1" in scheme "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme/scheme.go:31"',
    );
  });

  it('an old kubeadm API version, whatever the kind (validateSupportedVersion)', () => {
    expect(
      refusal(file(INIT, CLUSTER, { apiVersion: 'kubeadm.k8s.io/v1beta2', kind: 'JoinConfiguration' })).message,
    ).toBe(
      `your configuration file uses an old API spec: "kubeadm.k8s.io/v1beta2" (kind: "JoinConfiguration"). Please use kubeadm v1.22 instead and run 'kubeadm config migrate --old-config old.yaml --new-config new.yaml', which will write the new, similar spec using a newer API version.`,
    );
  });

  it("a KubeletConfiguration in another version: configBase.Unmarshal's UnsupportedConfigVersionError, after the other documents", () => {
    const kubelet = { apiVersion: 'kubelet.config.k8s.io/v1', kind: 'KubeletConfiguration' };
    const { message, warnings } = refusal(file(INIT, CLUSTER, kubelet, { apiVersion: 'zz.example/v1', kind: 'Z' }));
    expect(message).toBe(
      'unsupported apiVersion "kubelet.config.k8s.io/v1", you may have to do manual conversion to "kubelet.config.k8s.io/v1beta1" and run kubeadm again',
    );
    // A component-config group is never "Ignored"; the later document was still looked at.
    expect(warnings).toEqual([
      'initconfiguration.go:306] unknown configuration schema.GroupVersionKind{Group:"kubelet.config.k8s.io", Version:"v1", Kind:"KubeletConfiguration"}',
      'initconfiguration.go:306] unknown configuration schema.GroupVersionKind{Group:"zz.example", Version:"v1", Kind:"Z"}',
      'initconfiguration.go:361] [config] WARNING: Ignored YAML document with GroupVersionKind zz.example/v1, Kind=Z',
    ]);
  });
});
