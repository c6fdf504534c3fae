import { constants, createPublicKey, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { readTlv } from '@constellation/der';
import { x509 } from '../x509.js';

/** WebCrypto hash names as @peculiar/x509 gives them, and node:crypto's names for them. */
const HASHES: Record<string, string> = {
  'SHA-1': 'sha1',
  'SHA-256': 'sha256',
  'SHA-384': 'sha384',
  'SHA-512': 'sha512',
};

interface SignatureAlgorithm {
  name: string;
  hash?: { name: string };
  saltLength?: number;
}

/**
 * What kube-apiserver's validateCSR (pkg/apis/certificates/validation/validation.go) says of a
 * request's DER after its PEM was read: x509.ParseCertificateRequest's error, then
 * CertificateRequest.CheckSignature's (crypto/x509: SHA-1 allowed for requests, ECDSA, RSA
 * PKCS #1 v1.5 and PSS, Ed25519), with Go's wording; undefined when both pass. Synchronous, as
 * the stand-in validates a request before storing it.
 */
export function certificateRequestError(der: Buffer): string | undefined {
  let csr: x509.Pkcs10CertificateRequest;
  let key: KeyObject;
  let data: Buffer;
  try {
    csr = new x509.Pkcs10CertificateRequest(der);
    key = createPublicKey({ key: Buffer.from(csr.publicKey.rawData), format: 'der', type: 'spki' });
    // The signed part: the request's first element (certificationRequestInfo), as received.
    data = readTlv(readTlv(der).content).raw;
  } catch {
    return 'x509: malformed certificate request';
  }
  const algorithm = csr.signatureAlgorithm as SignatureAlgorithm;
  const hash = algorithm.hash === undefined ? undefined : HASHES[algorithm.hash.name];
  const signature = Buffer.from(csr.signature);
  const keyType = key.asymmetricKeyType;
  const mismatch = (wanted: string): string =>
    `x509: signature algorithm specifies an ${wanted} public key, but have public key of type ${goKeyType(keyType)}`;
  try {
    switch (algorithm.name) {
      case 'ECDSA':
        if (hash === undefined) break;
        if (keyType !== 'ec') return mismatch('ECDSA');
        return verify(hash, data, { key, dsaEncoding: 'der' }, signature)
          ? undefined
          : 'x509: ECDSA verification failure';
      case 'RSASSA-PKCS1-v1_5':
        if (hash === undefined) break;
        if (keyType !== 'rsa') return mismatch('RSA');
        return verify(hash, data, key, signature) ? undefined : 'crypto/rsa: verification error';
      case 'RSA-PSS':
        if (hash === undefined) break;
        if (keyType !== 'rsa') return mismatch('RSA');
        return verify(
          hash,
          data,
          { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_AUTO },
          signature,
        )
          ? undefined
          : 'crypto/rsa: verification error';
      case 'Ed25519':
        if (keyType !== 'ed25519') return mismatch('Ed25519');
        return verify(null, data, key, signature) ? undefined : 'x509: Ed25519 verification failure';
      default:
        break;
    }
  } catch {
    // A signature node:crypto cannot even read (a malformed ECDSA encoding, say) does not verify.
    return algorithm.name === 'ECDSA' ? 'x509: ECDSA verification failure' : 'crypto/rsa: verification error';
  }
  return 'x509: cannot verify signature: algorithm unimplemented';
}

/** Go's %T of the public key types ParsePKIXPublicKey returns. */
function goKeyType(keyType: string | undefined): string {
  if (keyType === 'rsa') return '*rsa.PublicKey';
  if (keyType === 'ec') return '*ecdsa.PublicKey';
  if (keyType === 'ed25519') return 'ed25519.PublicKey';
  return String(keyType);
}
