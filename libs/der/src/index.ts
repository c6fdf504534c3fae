export type { DerExtension, Tlv } from './der-reader.js';
export {
  DerError,
  DerFields,
  TAG,
  children,
  decodeBoolean,
  decodeNamedBits,
  decodeOctetAlignedBits,
  decodeOid,
  decodeSmallNonNegativeInteger,
  readExtension,
  readOnly,
  readTlv,
} from './der-reader.js';
export { decodeTime, encodeTime } from './der-time.js';
export {
  bitString,
  boolean,
  explicit,
  generalizedTime,
  ia5String,
  implicit,
  integer,
  namedBits,
  nullValue,
  octetString,
  oid,
  sequence,
  set,
  smallInteger,
  tlv,
  utf8String,
} from './der-writer.js';
export type { SpkiKey } from './subject-public-key.js';
export { publicKeyBits, readCanonicalSpki, spkiKeyJwk } from './subject-public-key.js';
export {
  algorithmIdentifier,
  isKnownSignatureAlgorithm,
  signWith,
  signatureAlgorithmFor,
  signatureKeyType,
  verifySignature,
} from './signature-algorithms.js';
export type { NameAttribute } from './x509-name.js';
export { attributeValueText, directoryStringText, generalNameKind, readNameAttributes } from './x509-name.js';
export type { CertificateFields } from './certificate-reader.js';
export { readCertificate } from './certificate-reader.js';
export { pemBlock } from './pem.js';
