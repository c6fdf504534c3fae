/** The pods' addresses, cluster-wide. */
export const POD_NETWORK = '10.244.0.0/16';

/** Each node's pods get addresses from a /24 of POD_NETWORK of their own, by the node's position. */
export const podSubnet = (index: number): string => `10.244.${index}.0/24`;

/** Routes from the node at `index` to every other node's pods, through that node's address. */
export function peerPodRoutes(
  hosts: readonly { ip: string }[],
  index: number,
  reachable: (ip: string) => boolean = () => true,
): { subnet: string; via: string }[] {
  return hosts
    .map((host, i) => ({ subnet: podSubnet(i), via: host.ip }))
    .filter((route, i) => i !== index && reachable(route.via));
}

/** Debian's containernetworking-plugins (the pods' bridge, host-local addresses, host ports). */
export const CNI_BIN_DIR = '/usr/lib/cni';
