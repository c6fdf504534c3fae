import { isIP } from 'node:net';
import { ipFromBytes, ipToBytes } from '@constellation/keys';
import type { ResolvedCluster, ResolvedInit } from './config-defaults.js';
import { parseHostPort } from './config-validation.js';

/**
 * The API server certificate's subjectAltNames, as kubeadm's GetAPIServerAltNames
 * (cmd/kubeadm/app/util/pkiutil/pki_helpers.go) builds them: the node's name, the `kubernetes`
 * Service's four names in the cluster's DNS domain, the Service's ClusterIP (the first service
 * subnet's first address, GetAPIServerVirtualIP) and the advertise address, then the
 * controlPlaneEndpoint's host and each certSAN, as an IP when it is one, else as a DNS name.
 */
export function apiServerCertificateNames(
  init: ResolvedInit,
  cluster: ResolvedCluster,
): { ips: string[]; dnsNames: string[] } {
  const dnsNames = [
    init.nodeRegistration.name,
    'kubernetes',
    'kubernetes.default',
    'kubernetes.default.svc',
    `kubernetes.default.svc.${cluster.dnsDomain}`,
  ];
  const ips = [serviceClusterIp(cluster.serviceSubnet), init.advertiseAddress];
  const endpointHost = parseHostPort(cluster.controlPlaneEndpoint)?.host ?? '';
  for (const san of [endpointHost, ...cluster.certSANs]) {
    if (san === '') continue;
    if (isIP(san) === 0) dnsNames.push(san);
    else ips.push(san);
  }
  return { ips: [...new Set(ips)], dnsNames: [...new Set(dnsNames)] };
}

/** GetIndexedIP(first service subnet, 1): the network address with its host bits cleared, plus one. */
function serviceClusterIp(serviceSubnets: string): string {
  const [network = '', prefixText = ''] = (serviceSubnets.split(',')[0] ?? '').trim().split('/');
  const bytes = ipToBytes(network);
  const prefix = Number(prefixText);
  for (let bit = prefix; bit < bytes.length * 8; bit++) {
    const at = bit >> 3;
    bytes.writeUInt8(bytes.readUInt8(at) & ~(0x80 >> (bit & 7)), at);
  }
  for (let at = bytes.length - 1; at >= 0; at--) {
    const next = (bytes.readUInt8(at) + 1) & 0xff;
    bytes.writeUInt8(next, at);
    if (next !== 0) break;
  }
  return ipFromBytes(bytes);
}
