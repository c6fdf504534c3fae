import { isIP, isIPv4 } from 'node:net';

/**
 * The network source a call's peer (grpc-js's `getPeer()`: `<address>:<port>`, IPv6 without
 * brackets) counts as for limits per source: its IPv4 address, or the /64 of its IPv6 address,
 * since one host is routinely given a whole /64. An IPv4 address mapped into IPv6 counts as
 * itself. A peer that is no IP address (a unix socket's path) is its own source.
 */
export function peerSource(peer: string): string {
  // A TCP peer always ends in its port; without one, the whole peer is the address.
  const withoutPort = peer.replace(/:\d+$/, '');
  const address = isIP(withoutPort) !== 0 ? withoutPort : peer;
  if (isIPv4(address)) return address;
  if (isIP(address) !== 6) return address;
  const groups = ipv6Groups(address);
  const [a, b] = [groups[6] ?? 0, groups[7] ?? 0];
  const mapped = groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff;
  if (mapped) return [a >> 8, a & 0xff, b >> 8, b & 0xff].join('.');
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a dotted IPv4 tail converted). */
function ipv6Groups(address: string): number[] {
  const [head = '', tail] = address.split('::');
  const parse = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!isIPv4(group)) return [parseInt(group, 16)];
          const [w = 0, x = 0, y = 0, z = 0] = group.split('.').map(Number);
          return [(w << 8) | x, (y << 8) | z];
        });
  const front = parse(head);
  if (tail === undefined) return front;
  const back = parse(tail);
  return [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
}
