import { describe, expect, it } from 'vitest';
import { KUBE_PROXY_API, kubeProxyConfiguration, parseKubeProxyConfiguration } from './kube-proxy-config.js';
import { initConfiguration } from './kubeadm-config.js';
import type { InitConfigInput } from './kubeadm-config.js';
import { parseAllDocuments } from 'yaml';

const MINI = `# mini's machines
mode: nftables
conntrack:
  maxPerCore: 0
clusterCIDR: 10.244.0.0/16
`;

const refusal = (text: string): string => {
  try {
    parseKubeProxyConfiguration(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('accepted');
};

describe("a node image's KubeProxyConfiguration fields", () => {
  it('reads the fields, with or without apiVersion and kind, from YAML or JSON', () => {
    const fields = { mode: 'nftables', conntrack: { maxPerCore: 0 }, clusterCIDR: '10.244.0.0/16' };
    expect(parseKubeProxyConfiguration(MINI)).toEqual(fields);
    expect(parseKubeProxyConfiguration(`apiVersion: ${KUBE_PROXY_API}\nkind: KubeProxyConfiguration\n${MINI}`)).toEqual(
      fields,
    );
    expect(parseKubeProxyConfiguration(JSON.stringify(fields))).toEqual(fields);
    expect(
      parseKubeProxyConfiguration(
        [
          'featureGates: {SomeGate: true}',
          'logging: {format: json, verbosity: 2}',
          'nftables: {masqueradeBit: 14, syncPeriod: 1h30m, minSyncPeriod: 1.5s}',
          'iptables: {localhostNodePorts: false}',
          'conntrack: {tcpEstablishedTimeout: 24h, tcpCloseWaitTimeout: 0s, tcpBeLiberal: true}',
          'clientConnection: {qps: 7.5, burst: 10}',
          'nodePortAddresses: [primary]',
          'detectLocalMode: ClusterCIDR',
          'oomScoreAdj: -999',
        ].join('\n'),
      ),
    ).toMatchObject({ nftables: { syncPeriod: '1h30m' }, oomScoreAdj: -999 });
    expect(parseKubeProxyConfiguration('{}')).toEqual({});
  });

  it('names a field kube-proxy does not have, at any depth, with the fields it has', () => {
    expect(refusal('mode: nftables\nconntrak:\n  maxPerCore: 0\n')).toBe(
      `unknown field "conntrak" (KubeProxyConfiguration ${KUBE_PROXY_API} has featureGates, clientConnection, logging, hostnameOverride, bindAddress, healthzBindAddress, metricsBindAddress, bindAddressHardFail, enableProfiling, showHiddenMetricsForVersion, mode, iptables, ipvs, nftables, winkernel, detectLocalMode, detectLocal, clusterCIDR, nodePortAddresses, oomScoreAdj, conntrack, configSyncPeriod, portRange, windowsRunAsService)`,
    );
    expect(refusal('conntrack:\n  maxPerCpu: 0\n')).toBe(
      `unknown field "conntrack.maxPerCpu" (conntrack ${KUBE_PROXY_API} has maxPerCore, min, tcpEstablishedTimeout, tcpCloseWaitTimeout, tcpBeLiberal, udpTimeout, udpStreamTimeout)`,
    );
  });

  it('names a value of the wrong kind, and what the field takes', () => {
    expect(refusal('mode: nft\n')).toBe(
      'field "mode" must be one of "", "iptables", "ipvs", "nftables", "kernelspace", got "nft"',
    );
    expect(refusal('conntrack:\n  maxPerCore: zero\n')).toBe(
      'field "conntrack.maxPerCore" must be a 32-bit integer, got "zero"',
    );
    expect(refusal('conntrack:\n  maxPerCore: 4294967296\n')).toBe(
      'field "conntrack.maxPerCore" must be a 32-bit integer, got 4294967296',
    );
    expect(refusal('nftables:\n  syncPeriod: 30\n')).toBe(
      'field "nftables.syncPeriod" must be a duration like "30s", "15m" or "1h30m", got 30',
    );
    expect(refusal('nodePortAddresses: primary\n')).toBe(
      'field "nodePortAddresses" must be a list of strings, got "primary"',
    );
    expect(refusal('conntrack: 0\n')).toBe('field "conntrack" must be a mapping, got 0');
    expect(refusal('featureGates:\n  SomeGate: "yes"\n')).toBe(
      'field "featureGates" must be a mapping of feature gate names to true or false, got {"SomeGate":"yes"}',
    );
    expect(refusal('clusterCIDR:\n')).toBe(
      'field "clusterCIDR" must be given a value (null leaves it unset: remove the field), got null',
    );
  });

  it("refuses another kind, another API version, and fields kubeadm's DaemonSet sets", () => {
    expect(refusal('apiVersion: kubeproxy.config.k8s.io/v1beta1\nmode: nftables\n')).toBe(
      `field "apiVersion" must be "${KUBE_PROXY_API}", got "kubeproxy.config.k8s.io/v1beta1"`,
    );
    expect(refusal('kind: KubeletConfiguration\n')).toBe(
      'field "kind" must be "KubeProxyConfiguration", got "KubeletConfiguration"',
    );
    expect(refusal('clientConnection:\n  kubeconfig: /etc/kubernetes/admin.conf\n')).toBe(
      'field "clientConnection.kubeconfig" is not the node image\'s to set: kubeadm\'s DaemonSet gives kube-proxy its kubeconfig (/var/lib/kube-proxy/kubeconfig.conf)',
    );
    expect(refusal('hostnameOverride: node-1\n')).toContain('field "hostnameOverride" is not the node image\'s to set');
  });

  it('refuses what is not one mapping of YAML', () => {
    expect(refusal('mode: nftables\nmode: iptables\n')).toMatch(/^not YAML: Map keys must be unique/);
    expect(refusal('mode: nftables\n---\nmode: iptables\n')).toMatch(/^not YAML: Source contains multiple documents/);
    expect(refusal('- mode: nftables\n')).toBe(
      'expected a KubeProxyConfiguration mapping (fields like mode: nftables), got [{"mode":"nftables"}]',
    );
    expect(refusal('')).toBe('expected a KubeProxyConfiguration mapping (fields like mode: nftables), got null');
  });
});

describe("kubeadm init's KubeProxyConfiguration", () => {
  const input: InitConfigInput = {
    nodeName: 'control-plane-0',
    nodeIp: '10.42.0.10',
    bindPort: 6443,
    clusterName: 'constellation',
    kubernetesVersion: 'v1.37.2',
    controlPlaneEndpoint: '10.42.0.2:6443',
    certSans: [],
    kubeProxy: true,
    node: { kubeProxy: parseKubeProxyConfiguration(MINI) },
  };
  const kinds = (yaml: string): unknown[] =>
    parseAllDocuments(yaml).map((doc) => (doc.toJS() as { kind?: unknown } | null)?.kind);

  it("is the node image's fields under kube-proxy's apiVersion and kind", () => {
    expect(kubeProxyConfiguration({ mode: 'nftables' })).toEqual({
      apiVersion: KUBE_PROXY_API,
      kind: 'KubeProxyConfiguration',
      mode: 'nftables',
    });
    const documents = parseAllDocuments(initConfiguration(input)).map((doc) => doc.toJS() as Record<string, unknown>);
    expect(documents.find((doc) => doc['kind'] === 'KubeProxyConfiguration')).toEqual({
      apiVersion: KUBE_PROXY_API,
      kind: 'KubeProxyConfiguration',
      mode: 'nftables',
      conntrack: { maxPerCore: 0 },
      clusterCIDR: '10.244.0.0/16',
    });
  });

  it('is left out when the cluster runs no kube-proxy, and when the node image sets nothing', () => {
    expect(kinds(initConfiguration(input))).toEqual([
      'InitConfiguration',
      'ClusterConfiguration',
      'KubeletConfiguration',
      'KubeProxyConfiguration',
    ]);
    expect(kinds(initConfiguration({ ...input, kubeProxy: false }))).not.toContain('KubeProxyConfiguration');
    expect(initConfiguration({ ...input, kubeProxy: false })).toContain('addon/kube-proxy');
    expect(kinds(initConfiguration({ ...input, node: {} }))).not.toContain('KubeProxyConfiguration');
  });
});
