import { describe, expect, it } from 'vitest';
import { canonicalAddress, canonicalAddressOrUndefined } from './canonical-address.js';

describe('canonicalAddress', () => {
  it('writes each address one way: RFC 5952 IPv6, and IPv4-mapped IPv6 as the IPv4 address (Go verifies either for both)', () => {
    expect(canonicalAddress('10.42.0.1')).toBe('10.42.0.1');
    expect(canonicalAddress('FD00:0:0:0:0:0:0:0001')).toBe('fd00::1');
    expect(canonicalAddress('::ffff:10.42.0.1')).toBe('10.42.0.1');
    expect(canonicalAddress('::ffff:a2a:1')).toBe('10.42.0.1');
    // IPv4-compatible (deprecated) is another address to Go's net.IP.Equal: kept apart.
    expect(canonicalAddress('::10.42.0.1')).toBe('::a2a:1');
    expect(canonicalAddress('0:0:0:0:0:ffff:0a2a:0001')).toBe('10.42.0.1');
  });

  it('refuses what no certificate carries, naming it', () => {
    for (const text of ['fe80::1%eth0', '010.42.0.1', 'node-1', '']) {
      expect(() => canonicalAddress(text), text).toThrow(`"${text}" is not an IP address a certificate can carry`);
      expect(canonicalAddressOrUndefined(text), text).toBeUndefined();
    }
    expect(canonicalAddressOrUndefined('FD00::1')).toBe('fd00::1');
  });
});
