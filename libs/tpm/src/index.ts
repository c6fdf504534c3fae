export type { QuoteInfo } from './attest.js';
export { parseQuoteInfo } from './attest.js';
export { PCR_COUNT, TPM_ALG, TPM_ECC, TPM_GENERATED_VALUE, TPM_ST, TPMA_OBJECT } from './constants.js';
export { DeviceTransport } from './device-transport.js';

export { readEkCertificate } from './ek.js';
export type { EndorsementKeys } from './endorsement-keys.js';
export { readEndorsementKeys } from './endorsement-keys.js';
export { TpmError, TpmParseError } from './errors.js';
export type { HashName } from './hash-algorithm.js';
export { hashAlgorithm } from './hash-algorithm.js';
export { TpmReader, TpmWriter } from './marshal.js';

export { pcrCompositeDigest } from './pcr-digest.js';

export { writePcrSelections } from './pcr-selection.js';
export type { EccPublic, RsaPublic, SchemeDefinition, SymmetricDefinition, TpmPublic } from './public-area.js';
export { marshalPublic, parsePublic, publicKeyObject, publicName } from './public-area.js';

export type { TpmSignature } from './signature.js';
export { marshalSignature, parseSignature, verifySignature } from './signature.js';

export { withTpmPriority } from './priority.js';
export { SocketTransport } from './socket-transport.js';

export { SwtpmControl } from './swtpm-control.js';
export type { KeyAlgorithm } from './templates.js';
export { AK_ATTRIBUTES, DEFAULT_AK_ALGORITHM, akTemplate, ekTemplate } from './templates.js';
export type { Quote } from './tpm.js';
export { Tpm } from './tpm.js';
export type { TpmTransport } from './transport.js';
