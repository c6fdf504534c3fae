import { parse, stringify } from 'yaml';
import type { ResolvedCluster } from './config-defaults.js';
import { getConfigMapWithShortRetry } from './config-map-short-retry.js';
import type { Credential } from './https-json.js';
import { httpsJson } from './https-json.js';

/*
 * kube-system/kubeadm-config: init's upload-config phase stores the cluster's ClusterConfiguration
 * there (cmd/kubeadm/app/phases/uploadconfig/uploadconfig.go UploadConfiguration; RBAC
 * kubeadm:nodes-kubeadm-config lets the node token group and nodes read it), and join's
 * preflight reads it back with the TLS bootstrap token (cmd/kubeadm/app/util/config/cluster.go
 * FetchInitConfigurationFromCluster). The stored document holds what was configured and
 * defaulted, not the run-time fallbacks: no controlPlaneEndpoint unless one was given.
 */

const KEY = 'ClusterConfiguration';

/** The ClusterConfiguration document as kubeadm marshals it (empty optional fields left out). */
function clusterConfigurationYaml(cluster: ResolvedCluster): string {
  return stringify({
    apiVersion: 'kubeadm.k8s.io/v1beta4',
    kind: 'ClusterConfiguration',
    ...(cluster.certSANs.length > 0 ? { apiServer: { certSANs: cluster.certSANs } } : {}),
    certificatesDir: '/etc/kubernetes/pki',
    clusterName: cluster.clusterName,
    ...(cluster.controlPlaneEndpoint === '' ? {} : { controlPlaneEndpoint: cluster.controlPlaneEndpoint }),
    kubernetesVersion: cluster.kubernetesVersion,
    networking: {
      dnsDomain: cluster.dnsDomain,
      ...(cluster.podSubnet === '' ? {} : { podSubnet: cluster.podSubnet }),
      serviceSubnet: cluster.serviceSubnet,
    },
  });
}

/** UploadConfiguration: creates the ConfigMap with kubeadm's admin credentials. */
export async function uploadClusterConfiguration(
  server: string,
  caPem: string,
  admin: Credential,
  cluster: ResolvedCluster,
): Promise<void> {
  const res = await httpsJson(`${server}/api/v1/namespaces/kube-system/configmaps`, {
    method: 'POST',
    ca: caPem,
    credential: admin,
    body: {
      metadata: { name: 'kubeadm-config', namespace: 'kube-system' },
      data: { [KEY]: clusterConfigurationYaml(cluster) },
    },
  });
  if (res.status !== 201 && res.status !== 409)
    throw new Error(`cannot store the kubeadm-config ConfigMap: status ${res.status}`);
}

/**
 * The stored ClusterConfiguration's fields join uses, read with the bootstrap token
 * (getInitConfigurationFromCluster: GetConfigMapWithShortRetry); throws kubeadm's message.
 */
export async function fetchClusterConfiguration(
  server: string,
  caPem: string,
  token: string,
): Promise<{ clusterName: string; controlPlaneEndpoint: string }> {
  let data;
  try {
    data = await getConfigMapWithShortRetry(server, caPem, { token }, 'kubeadm-config');
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(`unable to fetch the kubeadm-config ConfigMap: failed to get config map: ${reason}`, {
      cause: err,
    });
  }
  const text = data[KEY];
  if (text === undefined)
    throw new Error(
      `unable to fetch the kubeadm-config ConfigMap: unexpected error when reading kubeadm-config ConfigMap: ${KEY} key value pair missing`,
    );
  const document = parse(text) as { clusterName?: unknown; controlPlaneEndpoint?: unknown } | null;
  const { clusterName, controlPlaneEndpoint } = document ?? {};
  return {
    // v1beta4 SetDefaults_ClusterConfiguration: DefaultClusterName.
    clusterName: typeof clusterName === 'string' && clusterName !== '' ? clusterName : 'kubernetes',
    controlPlaneEndpoint: typeof controlPlaneEndpoint === 'string' ? controlPlaneEndpoint : '',
  };
}
