import { createCipheriv, createDecipheriv, createECDH, hkdfSync, randomBytes } from 'node:crypto';
import type { ECDH } from 'node:crypto';
import type { SealedResponse } from '@constellation/proto';
import { AtlsError } from './errors.js';

const SEAL_INFO = Buffer.from('constellation/atls/seal/v1');
const POINT_BYTES = 65;

/** A fresh ECDH P-256 key pair for one challenge exchange. */
export function ephemeralKey(): { ecdh: ECDH; publicKey: Buffer } {
  const ecdh = createECDH('prime256v1');
  return { ecdh, publicKey: ecdh.generateKeys() };
}

function sealKey(shared: Buffer, nonce: Uint8Array, nodeKey: Uint8Array, serviceKey: Uint8Array): Buffer {
  return Buffer.from(hkdfSync('sha256', shared, nonce, Buffer.concat([SEAL_INFO, nodeKey, serviceKey]), 32));
}

/**
 * Encrypts `plaintext` so only the holder of `nodePublicKey`'s private key can read it:
 * ECDH with a fresh service key (or the one the service attested), HKDF-SHA256 (salt = challenge nonce, info binds both keys),
 * AES-256-GCM with the nonce as associated data.
 */
export function seal(
  plaintext: Uint8Array,
  nodePublicKey: Uint8Array,
  nonce: Uint8Array,
  serviceKey: { ecdh: ECDH; publicKey: Buffer } = ephemeralKey(),
): Omit<SealedResponse, 'serviceActivationProof'> {
  if (nodePublicKey.length !== POINT_BYTES || nodePublicKey[0] !== 0x04) {
    throw new AtlsError('ephemeral public key must be an uncompressed P-256 point (65 bytes)');
  }
  const service = serviceKey.ecdh;
  const servicePublicKey = serviceKey.publicKey;
  let shared: Buffer;
  try {
    shared = service.computeSecret(nodePublicKey);
  } catch {
    throw new AtlsError('ephemeral public key is not a point on P-256');
  }
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealKey(shared, nonce, nodePublicKey, servicePublicKey), iv);
  cipher.setAAD(nonce);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return { servicePublicKey, iv, ciphertext };
}

/** Decrypts a SealedResponse with the node's ephemeral key; any tampering fails authentication. */
export function open(
  sealed: Omit<SealedResponse, 'serviceActivationProof'>,
  node: { ecdh: ECDH; publicKey: Buffer },
  nonce: Uint8Array,
): Buffer {
  if (sealed.iv.length !== 12 || sealed.ciphertext.length < 16 || sealed.servicePublicKey.length !== POINT_BYTES) {
    throw new AtlsError('sealed response is malformed');
  }
  try {
    const shared = node.ecdh.computeSecret(sealed.servicePublicKey);
    const decipher = createDecipheriv(
      'aes-256-gcm',
      sealKey(shared, nonce, node.publicKey, sealed.servicePublicKey),
      sealed.iv,
    );
    decipher.setAAD(nonce);
    decipher.setAuthTag(sealed.ciphertext.subarray(sealed.ciphertext.length - 16));
    return Buffer.concat([
      decipher.update(sealed.ciphertext.subarray(0, sealed.ciphertext.length - 16)),
      decipher.final(),
    ]);
  } catch (err) {
    throw new AtlsError(
      "sealed response does not decrypt with this exchange's key (tampered, or meant for someone else)",
      { cause: err },
    );
  }
}
