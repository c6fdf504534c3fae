import * as openpgp from 'openpgp';
import { errorMessage } from '@constellation/errors';

/**
 * Checks an armored detached OpenPGP signature over `data` against a pinned armored keyring. The
 * signature must verify with one of the keyring's keys; anything else (another key, a tampered
 * file, a malformed signature) is an error. Verification happens before the data is parsed.
 */
export async function verifyDetachedSignature(
  data: Buffer,
  armoredSignature: string,
  armoredKeyring: string,
): Promise<string> {
  let keys: openpgp.Key[];
  try {
    keys = await openpgp.readKeys({ armoredKeys: armoredKeyring });
  } catch (err) {
    throw new Error(`the pinned keyring cannot be read: ${errorMessage(err)}`, { cause: err });
  }
  let signature: openpgp.Signature;
  try {
    signature = await openpgp.readSignature({ armoredSignature });
  } catch (err) {
    throw new Error(`the signature is not an armored OpenPGP signature: ${errorMessage(err)}`, { cause: err });
  }
  const message = await openpgp.createMessage({ binary: data });
  const { signatures } = await openpgp.verify({ message, signature, verificationKeys: keys, format: 'binary' });
  const errors: string[] = [];
  for (const entry of signatures) {
    try {
      await entry.verified;
      return entry.keyID.toHex();
    } catch (err) {
      errors.push(errorMessage(err));
    }
  }
  throw new Error(`signature check failed: ${errors.join('; ') || 'no signature'}`);
}
