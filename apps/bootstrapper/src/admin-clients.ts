import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { pooledApiConfiguration } from '@constellation/kubeadm';

/**
 * API clients for the new cluster, from the admin kubeconfig kubeadm wrote, sharing kept-alive
 * connections (waiting for the API server polls it).
 */
export function adminClients(adminConf: string): { core: CoreV1Api; rbac: RbacAuthorizationV1Api } {
  const kc = new KubeConfig();
  kc.loadFromFile(adminConf);
  const configuration = pooledApiConfiguration(kc);
  return { core: new CoreV1Api(configuration), rbac: new RbacAuthorizationV1Api(configuration) };
}
