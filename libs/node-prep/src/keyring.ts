import * as openpgp from 'openpgp';
import { errorMessage } from '@constellation/errors';

const BLOCK = /-----BEGIN PGP PUBLIC KEY BLOCK-----[\s\S]*?-----END PGP PUBLIC KEY BLOCK-----/g;

/**
 * Every public key of an armored keyring. openpgp reads only the first armored block of a text,
 * so a keyring of several blocks (old and new key during a rotation) is split and each block
 * read; a block that cannot be read, a private key block, or no block at all is an error. Blocks
 * of the same key (by fingerprint) are merged into one, so that a revocation appended after an
 * older copy of the key counts: verification takes the first key with a matching ID, and the
 * older copy, without the revocation, used to win (red-team finding).
 */
export async function readKeyring(armored: string, source: string): Promise<openpgp.Key[]> {
  if (armored.includes('PRIVATE KEY BLOCK'))
    throw new Error(`${source} holds a private key; it must hold public keys only`);
  const blocks = armored.match(BLOCK) ?? [];
  if (blocks.length === 0) throw new Error(`${source} has no armored public key block`);
  const keys: openpgp.Key[] = [];
  for (const [index, block] of blocks.entries()) {
    let read: openpgp.Key[];
    try {
      read = await openpgp.readKeys({ armoredKeys: block });
    } catch (err) {
      throw new Error(`${source}: key block ${index + 1} of ${blocks.length} cannot be read: ${errorMessage(err)}`, {
        cause: err,
      });
    }
    for (const key of read) {
      const same = keys.findIndex((k) => k.getFingerprint() === key.getFingerprint());
      if (same === -1) keys.push(key);
      else keys[same] = await (keys[same] as openpgp.Key).update(key);
    }
  }
  return keys;
}
