import { describe, expect, it } from 'vitest';
import { peerSource } from './peer-source.js';

describe('peerSource', () => {
  it.each([
    ['127.0.0.2:51234', '127.0.0.2'],
    ['10.0.0.7', '10.0.0.7'],
    // One host is routinely given a whole /64: its addresses are one source.
    ['2001:db8:1:2:aaaa:bbbb:cccc:dddd:443', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::9:443', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1:8080', '0:0:0:0::/64'],
    // An IPv4 client of a dual-stack listener counts as its IPv4 address.
    ['::ffff:127.0.0.3:40000', '127.0.0.3'],
    ['/run/socket', '/run/socket'],
  ])('%s counts as %s', (peer, source) => {
    expect(peerSource(peer)).toBe(source);
  });
});
