import { randomBytes } from 'node:crypto';
import { runChecked } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { kdfa, kdfe } from './kdf.js';

/** OpenSSL prints KDF output as colon-separated hex. */
async function openssl(args: string[]): Promise<Buffer> {
  const out = await runChecked('openssl', ['kdf', ...args], { timeoutMs: 10_000 });
  return Buffer.from(out.stdout.toString().trim().replaceAll(':', ''), 'hex');
}

// OpenSSL's KBKDF (SP800-108 counter mode, HMAC) builds u32(i) || salt || 0x00 || info || u32(L):
// KDFa with salt = label (without its zero) and info = contextU || contextV.
function opensslKdfa(hash: string, key: Buffer, label: string, context: Buffer, bytes: number): Promise<Buffer> {
  return openssl([
    '-keylen',
    String(bytes),
    '-kdfopt',
    `digest:${hash}`,
    '-kdfopt',
    'mac:HMAC',
    '-kdfopt',
    `hexkey:${key.toString('hex')}`,
    '-kdfopt',
    `hexsalt:${Buffer.from(label).toString('hex')}`,
    ...(context.length > 0 ? ['-kdfopt', `hexinfo:${context.toString('hex')}`] : []),
    'KBKDF',
  ]);
}

// OpenSSL's SSKDF (SP800-56C one-step, hash) is Hash(u32(i) || Z || info): KDFe with
// info = label || 0x00 || partyUInfo || partyVInfo.
function opensslKdfe(hash: string, z: Buffer, info: Buffer, bytes: number): Promise<Buffer> {
  return openssl([
    '-keylen',
    String(bytes),
    '-kdfopt',
    `digest:${hash}`,
    '-kdfopt',
    `hexkey:${z.toString('hex')}`,
    '-kdfopt',
    `hexinfo:${info.toString('hex')}`,
    'SSKDF',
  ]);
}

describe('KDFa', () => {
  it('matches OpenSSL KBKDF for the STORAGE and INTEGRITY derivations of MakeCredential', async () => {
    const seed = Buffer.from('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f', 'hex');
    const akName = Buffer.concat([Buffer.from('000b', 'hex'), Buffer.alloc(32, 0xab)]);
    const storage = kdfa('sha256', seed, 'STORAGE', akName, Buffer.alloc(0), 128);
    expect(storage).toEqual(await opensslKdfa('SHA256', seed, 'STORAGE', akName, 16));
    const integrity = kdfa('sha256', seed, 'INTEGRITY', Buffer.alloc(0), Buffer.alloc(0), 256);
    expect(integrity).toEqual(await opensslKdfa('SHA256', seed, 'INTEGRITY', Buffer.alloc(0), 32));
  });

  it('matches OpenSSL KBKDF over several HMAC blocks, with both contexts', async () => {
    const key = randomBytes(48);
    const u = randomBytes(20);
    const v = randomBytes(7);
    const out = kdfa('sha384', key, 'LABEL', u, v, 1000);
    expect(out).toHaveLength(125);
    expect(out).toEqual(await opensslKdfa('SHA384', key, 'LABEL', Buffer.concat([u, v]), 125));
  });

  it('is deterministic, treats a zero-terminated label like the bare one, and masks partial octets', () => {
    const key = Buffer.alloc(32, 7);
    const a = kdfa('sha256', key, 'STORAGE', Buffer.alloc(0), Buffer.alloc(0), 256);
    expect(kdfa('sha256', key, 'STORAGE', Buffer.alloc(0), Buffer.alloc(0), 256)).toEqual(a);
    expect(kdfa('sha256', key, Buffer.from('STORAGE\0'), Buffer.alloc(0), Buffer.alloc(0), 256)).toEqual(a);
    expect(kdfa('sha256', key, 'STORAGE', Buffer.alloc(0), Buffer.alloc(0), 128)).toHaveLength(16);
    // L is part of the input, so a shorter output is not a prefix of a longer one.
    expect(kdfa('sha256', key, 'STORAGE', Buffer.alloc(0), Buffer.alloc(0), 128)).not.toEqual(a.subarray(0, 16));
    const odd = kdfa('sha256', key, 'STORAGE', Buffer.alloc(0), Buffer.alloc(0), 12);
    expect(odd).toHaveLength(2);
    expect((odd[0] ?? 0) & 0xf0).toBe(0);
  });

  it('refuses nonsensical lengths', () => {
    expect(() => kdfa('sha256', Buffer.alloc(1), 'X', Buffer.alloc(0), Buffer.alloc(0), 0)).toThrow(RangeError);
    expect(() => kdfa('sha256', Buffer.alloc(1), 'X', Buffer.alloc(0), Buffer.alloc(0), 1.5)).toThrow(RangeError);
    expect(() => kdfa('sha256', Buffer.alloc(1), 'X', Buffer.alloc(0), Buffer.alloc(0), 1 << 20)).toThrow(RangeError);
  });
});

describe('KDFe', () => {
  it('matches OpenSSL SSKDF with info = "IDENTITY\\0" || partyUInfo || partyVInfo', async () => {
    const z = randomBytes(32);
    const u = randomBytes(32);
    const v = randomBytes(32);
    const seed = kdfe('sha256', z, 'IDENTITY', u, v, 256);
    expect(seed).toHaveLength(32);
    const info = Buffer.concat([Buffer.from('IDENTITY\0'), u, v]);
    expect(seed).toEqual(await opensslKdfe('SHA256', z, info, 32));
  });

  it('matches OpenSSL SSKDF over several hash blocks (P-384 sized inputs)', async () => {
    const z = randomBytes(48);
    const u = randomBytes(48);
    const v = randomBytes(48);
    const out = kdfe('sha256', z, 'IDENTITY', u, v, 80 * 8);
    const info = Buffer.concat([Buffer.from('IDENTITY\0'), u, v]);
    expect(out).toEqual(await opensslKdfe('SHA256', z, info, 80));
  });

  it('is deterministic and depends on every input', () => {
    const z = Buffer.alloc(32, 1);
    const u = Buffer.alloc(32, 2);
    const v = Buffer.alloc(32, 3);
    const seed = kdfe('sha256', z, 'IDENTITY', u, v, 256);
    expect(kdfe('sha256', z, 'IDENTITY', u, v, 256)).toEqual(seed);
    expect(kdfe('sha256', z, 'IDENTITY', v, u, 256)).not.toEqual(seed);
    expect(kdfe('sha256', z, 'IDENTITX', u, v, 256)).not.toEqual(seed);
    // No length field in KDFe: a shorter output is a prefix of a longer one.
    expect(kdfe('sha256', z, 'IDENTITY', u, v, 128)).toEqual(seed.subarray(0, 16));
  });
});
