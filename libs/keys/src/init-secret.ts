import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/*
 * The init secret proves that whoever calls Init created the machines: the infrastructure tags
 * every machine with a slow hash of it, the CLI sends the secret itself. Format:
 * "scrypt$<log2 N>$<r>$<p>$<salt base64>$<hash base64>".
 */

export interface ScryptCost {
  log2N: number;
  r: number;
  p: number;
}

/** About 50-100 ms per check on a small machine: cheap for Init, expensive for guessing. */
export const DEFAULT_SCRYPT_COST: ScryptCost = { log2N: 15, r: 8, p: 1 };

function derive(secret: Uint8Array, salt: Buffer, cost: ScryptCost, length: number): Promise<Buffer> {
  const N = 2 ** cost.log2N;
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, length, { N, r: cost.r, p: cost.p, maxmem: 256 * N * cost.r }, (err, key) => {
      if (err) reject(err);
      else resolve(key);
    });
  });
}

/** The slow hash of an init secret, for instance metadata. */
export async function hashInitSecret(secret: Uint8Array, cost: ScryptCost = DEFAULT_SCRYPT_COST): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(secret, salt, cost, 32);
  return ['scrypt', cost.log2N, cost.r, cost.p, salt.toString('base64'), hash.toString('base64')].join('$');
}

/** Whether `secret` matches `encoded`, compared in constant time. A malformed hash is an error, not a mismatch. */
export async function verifyInitSecret(secret: Uint8Array, encoded: string): Promise<boolean> {
  const parts = encoded.split('$');
  const [kind, log2N, r, p, salt, hash] = parts;
  if (parts.length !== 6 || kind !== 'scrypt' || salt === undefined || hash === undefined) {
    throw new Error('init secret hash is not in the form scrypt$<log2 N>$<r>$<p>$<salt>$<hash>');
  }
  const cost = { log2N: Number(log2N), r: Number(r), p: Number(p) };
  if (
    ![cost.log2N, cost.r, cost.p].every(Number.isInteger) ||
    cost.log2N < 10 ||
    cost.log2N > 20 ||
    cost.r < 1 ||
    cost.r > 32 ||
    cost.p < 1 ||
    cost.p > 16
  ) {
    throw new Error('init secret hash has out-of-range scrypt parameters');
  }
  const expected = Buffer.from(hash, 'base64');
  if (expected.length < 16) throw new Error('init secret hash is too short');
  const actual = await derive(secret, Buffer.from(salt, 'base64'), cost, expected.length);
  return timingSafeEqual(actual, expected);
}
