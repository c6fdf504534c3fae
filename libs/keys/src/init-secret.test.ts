import { describe, expect, it } from 'vitest';
import { hashInitSecret, verifyInitSecret } from './init-secret.js';

const cheap = { log2N: 10, r: 8, p: 1 };

describe('init secret hash', () => {
  it('accepts the right secret and refuses others', async () => {
    const hash = await hashInitSecret(Buffer.from('correct horse'), cheap);
    expect(hash).toMatch(/^scrypt\$10\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(await verifyInitSecret(Buffer.from('correct horse'), hash)).toBe(true);
    expect(await verifyInitSecret(Buffer.from('correct horsf'), hash)).toBe(false);
    expect(await verifyInitSecret(Buffer.alloc(0), hash)).toBe(false);
  });

  it('salts: the same secret hashes differently each time', async () => {
    expect(await hashInitSecret(Buffer.from('x'), cheap)).not.toBe(await hashInitSecret(Buffer.from('x'), cheap));
  });

  it('rejects malformed hashes and absurd parameters instead of treating them as a mismatch', async () => {
    await expect(verifyInitSecret(Buffer.from('x'), '$2a$10$bcrypthash')).rejects.toThrow(/not in the form/);
    await expect(verifyInitSecret(Buffer.from('x'), 'scrypt$40$8$1$AAAA$AAAAAAAAAAAAAAAAAAAAAA==')).rejects.toThrow(
      /out-of-range/,
    );
  });
});
