import { parseDocument } from 'yaml';

/*
 * The KubeProxyConfiguration fields a node image sets (the bootstrapper's --kube-proxy-config), checked
 * against kube-proxy's v1alpha1 schema when the bootstrapper starts: an unknown field or a value of the
 * wrong kind is an error naming the field. kubeadm checks only that the document decodes (an unknown
 * field, a number for a duration), and only at init; a mode kube-proxy does not have passes kubeadm,
 * and the kube-proxy DaemonSet then crash-loops on every node.
 */

export const KUBE_PROXY_API = 'kubeproxy.config.k8s.io/v1alpha1';
export const KUBE_PROXY_KIND = 'KubeProxyConfiguration';

/** KubeProxyConfiguration fields (apiVersion and kind left out), as checked by parseKubeProxyConfiguration. */
export type KubeProxyFields = Readonly<Record<string, unknown>>;

type Kind =
  | 'string'
  | 'boolean'
  | 'int32'
  | 'number'
  | 'duration'
  | 'strings'
  | 'gates'
  | 'object'
  | { oneOf: readonly string[] }
  | { fields: Schema };
interface Schema {
  readonly [field: string]: Kind;
}

const iptables: Schema = {
  masqueradeBit: 'int32',
  masqueradeAll: 'boolean',
  localhostNodePorts: 'boolean',
  syncPeriod: 'duration',
  minSyncPeriod: 'duration',
};

/** kube-proxy's KubeProxyConfiguration, k8s.io/kube-proxy/config/v1alpha1 (1.35 to 1.37). */
const SCHEMA: Schema = {
  featureGates: 'gates',
  clientConnection: {
    fields: {
      kubeconfig: 'string',
      acceptContentTypes: 'string',
      contentType: 'string',
      qps: 'number',
      burst: 'int32',
    },
  },
  // component-base's LoggingConfiguration (format, flushFrequency, verbosity, vmodule, options): kube-proxy checks it.
  logging: 'object',
  hostnameOverride: 'string',
  bindAddress: 'string',
  healthzBindAddress: 'string',
  metricsBindAddress: 'string',
  bindAddressHardFail: 'boolean',
  enableProfiling: 'boolean',
  showHiddenMetricsForVersion: 'string',
  mode: { oneOf: ['', 'iptables', 'ipvs', 'nftables', 'kernelspace'] },
  iptables: { fields: iptables },
  ipvs: {
    fields: {
      syncPeriod: 'duration',
      minSyncPeriod: 'duration',
      scheduler: 'string',
      excludeCIDRs: 'strings',
      strictARP: 'boolean',
      tcpTimeout: 'duration',
      tcpFinTimeout: 'duration',
      udpTimeout: 'duration',
    },
  },
  nftables: {
    fields: { masqueradeBit: 'int32', masqueradeAll: 'boolean', syncPeriod: 'duration', minSyncPeriod: 'duration' },
  },
  winkernel: {
    fields: {
      networkName: 'string',
      sourceVip: 'string',
      enableDSR: 'boolean',
      rootHnsEndpointName: 'string',
      forwardHealthCheckVip: 'boolean',
    },
  },
  detectLocalMode: { oneOf: ['', 'ClusterCIDR', 'NodeCIDR', 'BridgeInterface', 'InterfaceNamePrefix'] },
  detectLocal: { fields: { bridgeInterface: 'string', interfaceNamePrefix: 'string' } },
  clusterCIDR: 'string',
  nodePortAddresses: 'strings',
  oomScoreAdj: 'int32',
  conntrack: {
    fields: {
      maxPerCore: 'int32',
      min: 'int32',
      tcpEstablishedTimeout: 'duration',
      tcpCloseWaitTimeout: 'duration',
      tcpBeLiberal: 'boolean',
      udpTimeout: 'duration',
      udpStreamTimeout: 'duration',
    },
  },
  configSyncPeriod: 'duration',
  portRange: 'string',
  windowsRunAsService: 'boolean',
};

/** Fields that are not the node image's to set: kubeadm's DaemonSet decides them, per cluster or per node. */
const OWNED: Readonly<Record<string, string>> = {
  'clientConnection.kubeconfig':
    "kubeadm's DaemonSet gives kube-proxy its kubeconfig (/var/lib/kube-proxy/kubeconfig.conf)",
  hostnameOverride: "kubeadm's DaemonSet passes each pod its node's name (--hostname-override)",
};

/** A Go duration as metav1.Duration reads it, a string: "0", or numbers with units (ns, us, µs, ms, s, m, h). */
const DURATION = /^(0|([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+$/;

const describe = (value: unknown): string => (typeof value === 'string' ? `"${value}"` : JSON.stringify(value));

const isMapping = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function checkValue(path: string, kind: Kind, value: unknown): void {
  const fail = (expected: string): never => {
    throw new Error(`field "${path}" must be ${expected}, got ${describe(value)}`);
  };
  if (value === null) fail('given a value (null leaves it unset: remove the field)');
  if (typeof kind === 'object') {
    if ('oneOf' in kind) {
      if (typeof value !== 'string' || !kind.oneOf.includes(value))
        fail(`one of ${kind.oneOf.map((v) => `"${v}"`).join(', ')}`);
      return;
    }
    if (!isMapping(value)) fail('a mapping');
    checkFields(path, kind.fields, value as Record<string, unknown>);
    return;
  }
  switch (kind) {
    case 'string':
      if (typeof value !== 'string') fail('a string');
      return;
    case 'boolean':
      if (typeof value !== 'boolean') fail('true or false');
      return;
    case 'int32':
      if (!Number.isInteger(value) || (value as number) < -(2 ** 31) || (value as number) >= 2 ** 31)
        fail('a 32-bit integer');
      return;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) fail('a number');
      return;
    case 'duration':
      if (typeof value !== 'string' || !DURATION.test(value)) fail('a duration like "30s", "15m" or "1h30m"');
      return;
    case 'strings':
      if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) fail('a list of strings');
      return;
    case 'gates':
      if (!isMapping(value) || Object.values(value).some((gate) => typeof gate !== 'boolean'))
        fail('a mapping of feature gate names to true or false');
      return;
    case 'object':
      if (!isMapping(value)) fail('a mapping');
      return;
  }
}

function checkFields(prefix: string, schema: Schema, document: Record<string, unknown>): void {
  for (const [field, value] of Object.entries(document)) {
    const path = prefix === '' ? field : `${prefix}.${field}`;
    const kind = schema[field];
    if (kind === undefined)
      throw new Error(
        `unknown field "${path}" (${prefix === '' ? KUBE_PROXY_KIND : prefix} ${KUBE_PROXY_API} has ${Object.keys(schema).join(', ')})`,
      );
    const owner = OWNED[path];
    if (owner !== undefined) throw new Error(`field "${path}" is not the node image's to set: ${owner}`);
    checkValue(path, kind, value);
  }
}

/**
 * Reads a node image's KubeProxyConfiguration fields from YAML (or JSON): one mapping of kube-proxy's
 * v1alpha1 fields, with apiVersion and kind optional but, when present, kube-proxy's. Throws an
 * error naming the first field that kube-proxy would not take.
 */
export function parseKubeProxyConfiguration(text: string): KubeProxyFields {
  const document = parseDocument(text, { uniqueKeys: true });
  const problem = document.errors[0];
  if (problem !== undefined) throw new Error(`not YAML: ${problem.message}`);
  const value: unknown = document.toJS();
  if (!isMapping(value))
    throw new Error(`expected a ${KUBE_PROXY_KIND} mapping (fields like mode: nftables), got ${describe(value)}`);
  const { apiVersion, kind, ...fields } = value;
  if (apiVersion !== undefined && apiVersion !== KUBE_PROXY_API)
    throw new Error(`field "apiVersion" must be "${KUBE_PROXY_API}", got ${describe(apiVersion)}`);
  if (kind !== undefined && kind !== KUBE_PROXY_KIND)
    throw new Error(`field "kind" must be "${KUBE_PROXY_KIND}", got ${describe(kind)}`);
  checkFields('', SCHEMA, fields);
  return fields;
}

/**
 * The KubeProxyConfiguration document for `kubeadm init`: the node image's fields (none: an empty
 * one). kubeadm merges it with its defaults (every field left out; the kubeconfig; clusterCIDR from
 * the pod subnet) and writes the result to the kube-proxy ConfigMap every node's kube-proxy reads.
 */
export function kubeProxyConfiguration(node: KubeProxyFields | undefined): Record<string, unknown> {
  return { apiVersion: KUBE_PROXY_API, kind: KUBE_PROXY_KIND, ...node };
}
