import { parse } from 'yaml';
import { getConfigMapWithShortRetry } from './config-map-short-retry.js';

/*
 * kube-system/kubeadm-config: init's upload-config phase stores the cluster's ClusterConfiguration
 * there (cmd/kubeadm/app/phases/uploadconfig/uploadconfig.go UploadConfiguration; RBAC
 * kubeadm:nodes-kubeadm-config lets the node token group and nodes read it), and join's
 * preflight reads it back with the TLS bootstrap token (cmd/kubeadm/app/util/config/cluster.go
 * FetchInitConfigurationFromCluster). The stored document holds what was configured and
 * defaulted, not the run-time fallbacks: no controlPlaneEndpoint unless one was given.
 */

const KEY = 'ClusterConfiguration';

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
