import { describe, expect, it } from 'vitest';
import { ipFromBytes, ipToBytes } from './ip-address.js';

describe('IP addresses in subjectAltNames', () => {
  it('writes 4 or 16 octets and reads them back in the canonical text form', () => {
    expect(ipToBytes('10.42.0.11').toString('hex')).toBe('0a2a000b');
    expect(ipToBytes('fd00::11').toString('hex')).toBe('fd000000000000000000000000000011');
    expect(ipToBytes('::ffff:10.0.0.1').toString('hex')).toBe('00000000000000000000ffff0a000001');
    expect(ipToBytes('::').toString('hex')).toBe('0'.repeat(32));
    for (const ip of [
      '10.42.0.11',
      'fd00::11',
      '::1',
      '::',
      '2001:db8::1:0:0:1',
      'fe80::1:2:3:4:5',
      '1:2:3:4:5:6:7:8',
    ]) {
      expect(ipFromBytes(ipToBytes(ip))).toBe(ip);
    }
  });

  it('prints RFC 5952 text: the longest zero run of two or more groups shortened, lower case', () => {
    expect(ipFromBytes(ipToBytes('FD00:0:0:0:0:0:0:11'))).toBe('fd00::11');
    expect(ipFromBytes(ipToBytes('2001:db8:0:1:1:1:1:1'))).toBe('2001:db8:0:1:1:1:1:1'); // one zero group stays
    expect(ipFromBytes(ipToBytes('2001:0:0:1:0:0:0:1'))).toBe('2001:0:0:1::1'); // the longer run
    expect(ipFromBytes(ipToBytes('2001:db8:0:0:1:0:0:1'))).toBe('2001:db8::1:0:0:1'); // the first of equal runs
  });

  it('refuses text that is no address, and shows other octet counts as hex no address check accepts', () => {
    expect(() => ipToBytes('10.42.0.256')).toThrow(RangeError);
    expect(() => ipToBytes('worker-1')).toThrow('"worker-1" is not an IP address');
    expect(ipFromBytes(Buffer.from('0a000000ff000000', 'hex'))).toBe('0a000000ff000000');
  });
});
