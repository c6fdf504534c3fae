import {
  DerError,
  DerFields,
  TAG,
  children,
  decodeOctetAlignedBits,
  decodeOid,
  readExtension,
  readOnly,
} from './der-reader.js';
import type { DerExtension, Tlv } from './der-reader.js';
import { decodeTime } from './der-time.js';

/** The fields of an X.509 certificate (RFC 5280 §4.1), as views into its DER. */
export interface CertificateFields {
  /** The signed part, as received. */
  tbs: Tlv;
  serialNumber: Buffer;
  issuer: Tlv;
  notBefore: number;
  notAfter: number;
  subject: Tlv;
  subjectPublicKeyInfo: Tlv;
  extensions: DerExtension[];
  /** signatureAlgorithm's OID, the same AlgorithmIdentifier as the signed part names. */
  signatureAlgorithm: string;
  /** signatureValue's octets. */
  signature: Buffer;
}

/**
 * Reads a certificate's fields from the content of its outer SEQUENCE, each field checked for
 * the tag RFC 5280 §4.1 gives it. The caller reads the envelope (and decides what trailing bytes
 * or a BER envelope mean to it).
 */
export function readCertificate(content: Buffer): CertificateFields {
  const certificate = new DerFields(content, 'certificate');
  const tbsField = certificate.next(TAG.sequence, 'tbsCertificate');
  const outerAlgorithm = certificate.next(TAG.sequence, 'signatureAlgorithm');
  const signature = decodeOctetAlignedBits(certificate.next(TAG.bitString, 'signatureValue'), 'signatureValue');
  certificate.end();
  const tbs = new DerFields(tbsField.content, 'tbsCertificate');
  tbs.optional(0xa0); // version
  const serialNumber = tbs.next(TAG.integer, 'serialNumber').content;
  // RFC 5280 §4.1.1.2: the signed algorithm must be the one the signature is checked with.
  if (!tbs.next(TAG.sequence, 'signature').raw.equals(outerAlgorithm.raw)) {
    throw new DerError('signatureAlgorithm differs from the signature field of the signed part');
  }
  const issuer = tbs.next(TAG.sequence, 'issuer');
  const validity = new DerFields(tbs.next(TAG.sequence, 'validity').content, 'validity');
  const notBefore = decodeTime(validity.any('notBefore'), 'notBefore');
  const notAfter = decodeTime(validity.any('notAfter'), 'notAfter');
  validity.end();
  const subject = tbs.next(TAG.sequence, 'subject');
  const subjectPublicKeyInfo = tbs.next(TAG.sequence, 'subjectPublicKeyInfo');
  tbs.optional(0x81); // issuerUniqueID
  tbs.optional(0x82); // subjectUniqueID
  const extensionsField = tbs.optional(0xa3);
  tbs.end();
  // [3] EXPLICIT Extensions ::= SEQUENCE OF Extension
  const extensions =
    extensionsField === undefined
      ? []
      : children(readOnly(extensionsField.content, TAG.sequence, 'extensions').content).map(readExtension);
  const algorithm = new DerFields(outerAlgorithm.content, 'signatureAlgorithm').next(TAG.oid, 'algorithm');
  return {
    tbs: tbsField,
    serialNumber,
    issuer,
    notBefore,
    notAfter,
    subject,
    subjectPublicKeyInfo,
    extensions,
    signatureAlgorithm: decodeOid(algorithm.content),
    signature,
  };
}
