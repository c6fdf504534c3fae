import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';

/** API clients for the new cluster, from the admin kubeconfig kubeadm wrote. */
export function adminClients(adminConf: string): { core: CoreV1Api; rbac: RbacAuthorizationV1Api } {
  const kc = new KubeConfig();
  kc.loadFromFile(adminConf);
  return { core: kc.makeApiClient(CoreV1Api), rbac: kc.makeApiClient(RbacAuthorizationV1Api) };
}
