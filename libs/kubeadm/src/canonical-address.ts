import { isIP } from 'node:net';
import { ipFromBytes, ipToBytes } from '@constellation/keys';

/**
 * One spelling per address, the one certificates are read back in (`ipFromBytes`: dotted IPv4,
 * RFC 5952 IPv6), with an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as the IPv4 address, since
 * Go's certificate verifier takes a SAN in either form for the other.
 */
export function canonicalAddress(ip: string): string {
  // A zone index ("%eth0") is no part of an address a certificate carries.
  if (isIP(ip) === 0 || ip.includes('%')) throw new RangeError(`"${ip}" is not an IP address a certificate can carry`);
  const bytes = ipToBytes(ip);
  const mapped =
    bytes.length === 16 && bytes.subarray(0, 10).every((b) => b === 0) && bytes.readUInt16BE(10) === 0xffff;
  return ipFromBytes(mapped ? bytes.subarray(12) : bytes);
}

/** canonicalAddress, or undefined for text that is no IP address (a DNS name, say). */
export function canonicalAddressOrUndefined(text: string): string | undefined {
  try {
    return canonicalAddress(text);
  } catch {
    return undefined;
  }
}
