export type { QuoteInfo } from './attest.js';
export { MAX_ATTEST_BYTES, parseQuoteInfo } from './attest.js';
export {
  EK_CERT_NV_INDEX,
  PCR_COUNT,
  TPM_ALG,
  TPM_CAP,
  TPM_CC,
  TPM_ECC,
  TPM_PT,
  TPM_GENERATED_VALUE,
  TPM_RH,
  TPM_RS_PW,
  TPM_SE,
  TPM_ST,
  TPMA_OBJECT,
} from './constants.js';
export { DeviceTransport } from './device-transport.js';
export type { EkCertificateKind } from './ek.js';
export { derSequence, readEkCertificate } from './ek.js';
export { TpmError, TpmParseError, TpmTransportError } from './errors.js';
export type { HashName } from './hash-algorithm.js';
export { hashAlgorithm, hashAlgorithmId } from './hash-algorithm.js';
export { TpmReader, TpmWriter } from './marshal.js';
export type { NvPublic } from './nv.js';
export { MAX_NV_READ_BYTES, TPMA_NV } from './nv.js';
export { pcrCompositeDigest } from './pcr-digest.js';
export type { PcrSelection } from './pcr-selection.js';
export { readPcrSelections, writePcrSelections } from './pcr-selection.js';
export type { EccPublic, RsaPublic, TpmPublic } from './public-area.js';
export { marshalPublic, parsePublic, publicKeyObject, publicName } from './public-area.js';
export { describeResponseCode } from './response-code.js';
export type { TpmSignature } from './signature.js';
export { marshalSignature, parseSignature, verifySignature } from './signature.js';
export type { TpmPriority } from './priority.js';
export { PrioritySerialQueue, withTpmPriority } from './priority.js';
export { SocketTransport } from './socket-transport.js';
export type { SocketAddress, SocketTransportOptions } from './socket-transport.js';
export { SwtpmControl } from './swtpm-control.js';
export type { KeyAlgorithm } from './templates.js';
export { AK_ATTRIBUTES, akTemplate, ekTemplate } from './templates.js';
export type { AuthSession, Digest, Hierarchy, LoadedKey, PrimaryKeySpec, Quote } from './tpm.js';
export { Tpm } from './tpm.js';
export type { TpmTransport } from './transport.js';
