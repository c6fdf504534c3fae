import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import type { ApiServerAltNames } from './api-server-alt-names.js';
import { canonicalAddress } from './canonical-address.js';
import { DEFAULT_KUBERNETES_VERSION } from './kubernetes-version.js';

/** A component every node installs before kubeadm runs (mirrors constellation.components.v1). */
export interface ClusterComponent {
  url: string;
  hash: string;
  installPath: string;
  extract: boolean;
}

/** What the first node publishes at init so that joining nodes get the same software. */
export interface ClusterConfig {
  kubernetesVersion: string;
  components: ClusterComponent[];
  /**
   * What the API server's certificate names, which no worker's kubelet serving certificate may
   * name. Absent in clusters initialised before it was published.
   */
  apiServer?: ApiServerAltNames;
}

export const CLUSTER_CONFIG_MAP = 'constellation-cluster';

/** The ConfigMap `kube-system/constellation-cluster` holding `config`. */
export function clusterConfigMap(config: ClusterConfig): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: CLUSTER_CONFIG_MAP, namespace: 'kube-system' },
    data: {
      kubernetesVersion: config.kubernetesVersion,
      components: JSON.stringify(config.components),
      ...(config.apiServer === undefined ? {} : { apiServerAltNames: JSON.stringify(config.apiServer) }),
    },
  };
}

/**
 * Parses the ConfigMap's data, naming the field that is wrong. The version is the one the cluster
 * was initialised with (the CLI and the init request checked it was supported then): any
 * well-formed one is read, so that nodes keep joining a cluster whose release has since aged out.
 */
export function parseClusterConfig(data: Record<string, string> | undefined): ClusterConfig {
  const version = data?.['kubernetesVersion'];
  if (version === undefined || !/^v\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]+)?$/.test(version)) {
    throw new Error(
      `ConfigMap ${CLUSTER_CONFIG_MAP}: kubernetesVersion must look like ${DEFAULT_KUBERNETES_VERSION}, got ${JSON.stringify(version)}`,
    );
  }
  let components: unknown;
  try {
    components = JSON.parse(data?.['components'] ?? '[]');
  } catch {
    throw new Error(`ConfigMap ${CLUSTER_CONFIG_MAP}: components is not JSON`);
  }
  if (!Array.isArray(components)) throw new Error(`ConfigMap ${CLUSTER_CONFIG_MAP}: components must be a JSON array`);
  const parsed = components.map((item: unknown, i): ClusterComponent => {
    const c = item as Partial<Record<keyof ClusterComponent, unknown>> | null;
    if (
      c === null ||
      typeof c.url !== 'string' ||
      typeof c.hash !== 'string' ||
      typeof c.installPath !== 'string' ||
      typeof c.extract !== 'boolean'
    ) {
      throw new Error(
        `ConfigMap ${CLUSTER_CONFIG_MAP}: components[${i}] needs url, hash, installPath (strings) and extract (boolean)`,
      );
    }
    return { url: c.url, hash: c.hash, installPath: c.installPath, extract: c.extract };
  });
  const apiServer = parseApiServerAltNames(data?.['apiServerAltNames']);
  return { kubernetesVersion: version, components: parsed, ...(apiServer === undefined ? {} : { apiServer }) };
}

function parseApiServerAltNames(text: string | undefined): ApiServerAltNames | undefined {
  if (text === undefined) return undefined;
  const what = `ConfigMap ${CLUSTER_CONFIG_MAP}: apiServerAltNames`;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${what} is not JSON`);
  }
  const { dnsNames, ips } = (value ?? {}) as Partial<Record<keyof ApiServerAltNames, unknown>>;
  const strings = (list: unknown): list is string[] =>
    Array.isArray(list) && list.every((item) => typeof item === 'string');
  if (!strings(dnsNames) || !strings(ips)) throw new Error(`${what} needs dnsNames and ips (arrays of strings)`);
  return {
    dnsNames: dnsNames.map((name) => name.toLowerCase()),
    ips: ips.map((ip, i) => {
      try {
        return canonicalAddress(ip);
      } catch {
        throw new Error(`${what}: ips[${String(i)}] must be an IP address, got ${JSON.stringify(ip)}`);
      }
    }),
  };
}

/** Reads the published cluster configuration. */
export async function readClusterConfig(core: CoreV1Api): Promise<ClusterConfig> {
  const map = await core.readNamespacedConfigMap({ namespace: 'kube-system', name: CLUSTER_CONFIG_MAP });
  return parseClusterConfig(map.data);
}
