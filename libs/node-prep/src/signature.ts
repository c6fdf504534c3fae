import * as openpgp from 'openpgp';
import { errorMessage } from '@constellation/errors';

/**
 * Checks an armored detached OpenPGP signature over `data` against the pinned keys, and returns
 * the signing key's ID. openpgp checks the key's validity when the signature was made; a key that
 * has expired or been revoked since is refused too, so a signature made in 2020 with a key that
 * expired in 2020 does not verify today. Verification happens before the data is parsed.
 */
export async function verifyDetachedSignature(
  data: Buffer,
  armoredSignature: string,
  keys: readonly openpgp.Key[],
  now: Date = new Date(),
): Promise<string> {
  let signature: openpgp.Signature;
  try {
    signature = await openpgp.readSignature({ armoredSignature });
  } catch (err) {
    throw new Error(`the signature is not an armored OpenPGP signature: ${errorMessage(err)}`, { cause: err });
  }
  const message = await openpgp.createMessage({ binary: data });
  const { signatures } = await openpgp.verify({
    message,
    signature,
    verificationKeys: [...keys],
    format: 'binary',
    date: now,
  });
  const errors: string[] = [];
  for (const entry of signatures) {
    try {
      await entry.verified;
    } catch (err) {
      errors.push(errorMessage(err));
      continue;
    }
    const key = keys.find((k) => k.getKeys(entry.keyID).length > 0);
    try {
      if (key === undefined) throw new Error('it is not in the keyring');
      await key.getSigningKey(entry.keyID, now);
    } catch (err) {
      errors.push(`key ${entry.keyID.toHex()} made the signature but is not valid now: ${errorMessage(err)}`);
      continue;
    }
    return entry.keyID.toHex();
  }
  throw new Error(`signature check failed: ${errors.join('; ') || 'no signature'}`);
}
