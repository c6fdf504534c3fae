import { Refusal } from '@constellation/errors';
import { canonicalAddress, canonicalAddressOrUndefined, isKubernetesServiceName } from '@constellation/kubeadm';
import type { ApiServerAltNames } from '@constellation/kubeadm';
import { endpointHost } from '@constellation/kubeadm/api-server-alt-names';

/**
 * Refuses a worker whose kubelet serving certificate would name the API server: one of the
 * `kubernetes` Service's names, a name or address the API server's certificate carries (published
 * at init), or the control-plane endpoint nodes join through. The cluster CA signs both
 * certificates, and clients accept either for any name it carries, so a worker holding one could
 * answer kubelets, joining nodes and pods in the API server's place wherever it can take the
 * traffic. Control planes are not checked: they receive the cluster CA's key.
 */
export function refuseApiServerNames(
  nodeName: string,
  ips: readonly string[],
  apiServer: ApiServerAltNames | undefined,
  apiServerEndpoint: string,
): void {
  const host = endpointHost(apiServerEndpoint);
  const endpointIp = canonicalAddressOrUndefined(host);
  const names = new Set([...(apiServer?.dnsNames ?? []), ...(endpointIp === undefined ? [host.toLowerCase()] : [])]);
  if (isKubernetesServiceName(nodeName) || names.has(nodeName.toLowerCase())) {
    throw new Refusal(
      'denied',
      'api-server-name',
      `node name "${nodeName}" is a name of the API server (its certificate carries it, and a kubelet serving certificate carries its node name); a worker may not take it`,
    );
  }
  const addresses = new Set([...(apiServer?.ips ?? []), ...(endpointIp === undefined ? [] : [endpointIp])]);
  for (const ip of ips) {
    const address = canonicalAddress(ip);
    if (addresses.has(address)) {
      throw new Refusal(
        'denied',
        'api-server-name',
        `address ${address} is the API server's (its certificate names it: the control-plane endpoint, the kubernetes service address, an advertise address or a certSAN); a worker's kubelet serving certificate may not name it`,
      );
    }
  }
}
