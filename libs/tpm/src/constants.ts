// TPM 2.0 constants used by this client (TPM 2.0 Library, Part 2: Structures).

/** Command codes (TPM_CC). */
export const TPM_CC = {
  EvictControl: 0x120,
  NV_DefineSpace: 0x12a,
  CreatePrimary: 0x131,
  ActivateCredential: 0x147,
  NV_Read: 0x14e,
  PolicySecret: 0x151,
  PCR_Event: 0x13c,
  Startup: 0x144,
  Shutdown: 0x145,
  FlushContext: 0x165,
  NV_ReadPublic: 0x169,
  ReadPublic: 0x173,
  StartAuthSession: 0x176,
  GetCapability: 0x17a,
  GetRandom: 0x17b,
  PCR_Read: 0x17e,
  Quote: 0x158,
  PCR_Extend: 0x182,
} as const;

/** Structure tags (TPM_ST). */
export const TPM_ST = {
  NO_SESSIONS: 0x8001,
  SESSIONS: 0x8002,
  ATTEST_QUOTE: 0x8018,
} as const;

/** Algorithm identifiers (TPM_ALG_ID). */
export const TPM_ALG = {
  RSA: 0x0001,
  SHA1: 0x0004,
  AES: 0x0006,
  SHA256: 0x000b,
  SHA384: 0x000c,
  SHA512: 0x000d,
  NULL: 0x0010,
  RSASSA: 0x0014,
  RSAPSS: 0x0016,
  ECDSA: 0x0018,
  ECC: 0x0023,
  CFB: 0x0043,
} as const;

/** ECC curves (TPM_ECC_CURVE). */
export const TPM_ECC = {
  NIST_P256: 0x0003,
  NIST_P384: 0x0004,
} as const;

/** Permanent handles (TPM_RH) and the password session handle. */
export const TPM_RH = {
  OWNER: 0x40000001,
  NULL: 0x40000007,
  ENDORSEMENT: 0x4000000b,
  PLATFORM: 0x4000000c,
} as const;
export const TPM_RS_PW = 0x40000009;

/** Capabilities (TPM_CAP). */
export const TPM_CAP = {
  PCRS: 0x00000005,
  TPM_PROPERTIES: 0x00000006,
} as const;

/** TPM properties (TPM_PT) read with TPM_CAP_TPM_PROPERTIES. */
export const TPM_PT = {
  /** Largest NV read or write in one command (TPM_PT_FIXED + 44). */
  NV_BUFFER_MAX: 0x0000012c,
} as const;

/** Session types (TPM_SE). */
export const TPM_SE = {
  HMAC: 0x00,
  POLICY: 0x01,
} as const;

/**
 * TCG EK Credential Profile NV indexes of EK certificates. swtpm_setup writes RSA-2048 and
 * P-384; real TPMs usually carry RSA-2048 and often P-256.
 */
export const EK_CERT_NV_INDEX = {
  rsa: 0x01c00002,
  ecc: 0x01c0000a,
  'ecc-p384': 0x01c00016,
} as const;

/** Startup types (TPM_SU). */
export const TPM_SU = {
  CLEAR: 0x0000,
  STATE: 0x0001,
} as const;

/** Every TPM-generated attestation structure starts with this value (TPM_GENERATED_VALUE). */
export const TPM_GENERATED_VALUE = 0xff544347;

/** Object attribute bits (TPMA_OBJECT). */
export const TPMA_OBJECT = {
  fixedTPM: 1 << 1,
  stClear: 1 << 2,
  fixedParent: 1 << 4,
  sensitiveDataOrigin: 1 << 5,
  userWithAuth: 1 << 6,
  adminWithPolicy: 1 << 7,
  noDA: 1 << 10,
  encryptedDuplication: 1 << 11,
  restricted: 1 << 16,
  decrypt: 1 << 17,
  sign: 1 << 18,
} as const;

/** Number of PCRs in every bank of a PC-client TPM. */
export const PCR_COUNT = 24;

/** Largest command or response this client sends or accepts (TPM_PT_MAX_COMMAND_SIZE is 4096 on most TPMs). */
export const MAX_TPM_MESSAGE_BYTES = 8192;
