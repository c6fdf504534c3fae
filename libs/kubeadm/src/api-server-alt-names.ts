import { ipFromBytes, ipToBytes } from '@constellation/keys';
import { canonicalAddress, canonicalAddressOrUndefined } from './canonical-address.js';

/** kubeadm's defaults for what InitConfigInput leaves out (networking.serviceSubnet, dnsDomain). */
export const DEFAULT_SERVICE_SUBNET = '10.96.0.0/12';
export const DEFAULT_DNS_DOMAIN = 'cluster.local';

/** What of kubeadm's init configuration decides the API server certificate's names. */
export interface ApiServerNamesInput {
  nodeName: string;
  nodeIp: string;
  /** host:port (or [v6]:port) clients use for the control plane. */
  controlPlaneEndpoint: string;
  certSans: readonly string[];
  serviceCidr?: string;
}

/** ClusterConfiguration's apiServer.certSANs as init writes them: the loopback address, the node's and the user's. */
export function apiServerCertSans(input: ApiServerNamesInput): string[] {
  return [...new Set(['127.0.0.1', input.nodeIp, ...input.certSans.filter((s) => s !== '')])];
}

/**
 * The names and addresses the API server's serving certificate carries. The cluster CA signs
 * both it and every kubelet serving certificate, and clients accept either for any name it
 * carries: a worker holding a kubelet certificate for one of these could answer in the API
 * server's place.
 */
export interface ApiServerAltNames {
  dnsNames: string[];
  /** In canonicalAddress form. */
  ips: string[];
}

/**
 * The API server certificate's subjectAltNames for this init, as kubeadm builds them
 * (GetAPIServerAltNames, cmd/kubeadm/app/util/pkiutil/pki_helpers.go): the node's name, the
 * `kubernetes.default` service names, the service subnet's first address and the advertise
 * address, then the control-plane endpoint's host and the certSANs initConfiguration writes
 * (apiServerCertSans), each an IP or a DNS name.
 */
export function apiServerAltNames(input: ApiServerNamesInput): ApiServerAltNames {
  const dnsNames = [input.nodeName, ...kubernetesServiceNames(DEFAULT_DNS_DOMAIN)];
  const ips = [kubernetesServiceAddress(input.serviceCidr ?? DEFAULT_SERVICE_SUBNET), input.nodeIp];
  for (const san of [endpointHost(input.controlPlaneEndpoint), ...apiServerCertSans(input)]) {
    const ip = canonicalAddressOrUndefined(san);
    if (ip === undefined) dnsNames.push(san.toLowerCase());
    else ips.push(ip);
  }
  return { dnsNames: [...new Set(dnsNames)], ips: [...new Set(ips.map(canonicalAddress))] };
}

/** The names the `kubernetes` Service in `default` answers to in a cluster with `dnsDomain`. */
export function kubernetesServiceNames(dnsDomain: string): string[] {
  return ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', `kubernetes.default.svc.${dnsDomain}`];
}

/**
 * Whether `name` is one of the `kubernetes` Service's names in any cluster domain: no node may
 * be called that, whatever the cluster's configuration says.
 */
export function isKubernetesServiceName(name: string): boolean {
  const lower = name.toLowerCase().replace(/\.$/, '');
  return lower === 'kubernetes' || lower === 'kubernetes.default' || lower.startsWith('kubernetes.default.');
}

/**
 * The `kubernetes` Service's ClusterIP: the first address after the first service subnet's
 * network address (GetAPIServerVirtualIP in kubeadm's constants.go).
 */
export function kubernetesServiceAddress(serviceSubnets: string): string {
  const first = serviceSubnets.split(',')[0]?.trim() ?? '';
  const match = /^([^/]+)\/(\d{1,3})$/.exec(first);
  const network = match?.[1] ?? '';
  const prefix = Number(match?.[2]);
  if (canonicalAddressOrUndefined(network) === undefined) {
    throw new RangeError(`service subnet "${first}" is not an address/prefix CIDR`);
  }
  const bytes = ipToBytes(network);
  if (!(prefix >= 0 && prefix < bytes.length * 8)) {
    throw new RangeError(`service subnet "${first}": prefix ${String(match?.[2])} leaves no host addresses`);
  }
  // Clear the host bits, then add one.
  for (let bit = prefix; bit < bytes.length * 8; bit++) bytes[bit >> 3] = (bytes[bit >> 3] ?? 0) & ~(0x80 >> (bit & 7));
  for (let i = bytes.length - 1; i >= 0; i--) {
    bytes[i] = ((bytes[i] ?? 0) + 1) & 0xff;
    if (bytes[i] !== 0) break;
  }
  return canonicalAddress(ipFromBytes(bytes));
}

/** The host of `host:port`, `[v6]:port`, or a bare host (kubeadm's ParseHostPort). */
export function endpointHost(endpoint: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(endpoint);
  if (bracketed?.[1] !== undefined) return bracketed[1];
  const colons = endpoint.split(':').length - 1;
  return colons === 1 ? endpoint.slice(0, endpoint.indexOf(':')) : endpoint;
}
