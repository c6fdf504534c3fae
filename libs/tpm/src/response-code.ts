// Decoding of TPM_RC values (TPM 2.0 Library, Part 2, section 6.6).

const FORMAT1: Readonly<Record<number, string>> = {
  0x001: 'ASYMMETRIC',
  0x002: 'ATTRIBUTES',
  0x003: 'HASH',
  0x004: 'VALUE',
  0x005: 'HIERARCHY',
  0x007: 'KEY_SIZE',
  0x008: 'MGF',
  0x009: 'MODE',
  0x00a: 'TYPE',
  0x00b: 'HANDLE',
  0x00c: 'KDF',
  0x00d: 'RANGE',
  0x00e: 'AUTH_FAIL',
  0x00f: 'NONCE',
  0x010: 'PP',
  0x012: 'SCHEME',
  0x015: 'SIZE',
  0x016: 'SYMMETRIC',
  0x017: 'TAG',
  0x018: 'SELECTOR',
  0x01a: 'INSUFFICIENT',
  0x01b: 'SIGNATURE',
  0x01c: 'KEY',
  0x01d: 'POLICY_FAIL',
  0x01f: 'INTEGRITY',
  0x020: 'TICKET',
  0x021: 'RESERVED_BITS',
  0x022: 'BAD_AUTH',
  0x023: 'EXPIRED',
  0x024: 'POLICY_CC',
  0x025: 'BINDING',
  0x026: 'CURVE',
  0x027: 'ECC_POINT',
};

const VER1: Readonly<Record<number, string>> = {
  0x000: 'INITIALIZE',
  0x001: 'FAILURE',
  0x003: 'SEQUENCE',
  0x00b: 'PRIVATE',
  0x019: 'HMAC',
  0x020: 'DISABLED',
  0x021: 'EXCLUSIVE',
  0x024: 'AUTH_TYPE',
  0x025: 'AUTH_MISSING',
  0x026: 'POLICY',
  0x027: 'PCR',
  0x028: 'PCR_CHANGED',
  0x02d: 'UPGRADE',
  0x02e: 'TOO_MANY_CONTEXTS',
  0x02f: 'AUTH_UNAVAILABLE',
  0x030: 'REBOOT',
  0x031: 'UNBALANCED',
  0x042: 'COMMAND_SIZE',
  0x043: 'COMMAND_CODE',
  0x044: 'AUTHSIZE',
  0x045: 'AUTH_CONTEXT',
  0x046: 'NV_RANGE',
  0x047: 'NV_SIZE',
  0x048: 'NV_LOCKED',
  0x049: 'NV_AUTHORIZATION',
  0x04a: 'NV_UNINITIALIZED',
  0x04b: 'NV_SPACE',
  0x04c: 'NV_DEFINED',
  0x050: 'BAD_CONTEXT',
  0x051: 'CPHASH',
  0x052: 'PARENT',
  0x053: 'NEEDS_TEST',
  0x054: 'NO_RESULT',
  0x055: 'SENSITIVE',
};

const WARN: Readonly<Record<number, string>> = {
  0x001: 'CONTEXT_GAP',
  0x002: 'OBJECT_MEMORY',
  0x003: 'SESSION_MEMORY',
  0x004: 'MEMORY',
  0x005: 'SESSION_HANDLES',
  0x006: 'OBJECT_HANDLES',
  0x007: 'LOCALITY',
  0x008: 'YIELDED',
  0x009: 'CANCELED',
  0x00a: 'TESTING',
  0x020: 'NV_RATE',
  0x021: 'LOCKOUT',
  0x022: 'RETRY',
  0x023: 'NV_UNAVAILABLE',
};

export interface DescribedResponseCode {
  /** "TPM_RC_<NAME>", or "TPM_RC_UNKNOWN_0x..." for codes this client does not know. */
  name: string;
  /** The name plus which parameter, handle or session it refers to, when the TPM said so. */
  text: string;
}

/** Turns a TPM_RC into its spec name and, for format-1 codes, the parameter/handle/session it names. */
export function describeResponseCode(rc: number): DescribedResponseCode {
  if (rc === 0) return { name: 'TPM_RC_SUCCESS', text: 'TPM_RC_SUCCESS' };
  if ((rc & 0x080) !== 0) {
    const name = `TPM_RC_${FORMAT1[rc & 0x03f] ?? `UNKNOWN_0x${(rc & 0x0bf).toString(16)}`}`;
    const n = (rc >> 8) & 0xf;
    let where = '';
    if ((rc & 0x040) !== 0) where = ` in parameter ${n}`;
    else if ((rc & 0x800) !== 0) where = ` in session ${n - 8}`;
    else if (n !== 0) where = ` in handle ${n}`;
    return { name, text: `${name}${where}` };
  }
  if ((rc & 0x400) !== 0) {
    const name = `TPM_RC_VENDOR_0x${rc.toString(16)}`;
    return { name, text: name };
  }
  if ((rc & 0x100) !== 0) {
    const table = (rc & 0x800) !== 0 ? WARN : VER1;
    const name = `TPM_RC_${table[rc & 0x07f] ?? `UNKNOWN_0x${rc.toString(16)}`}`;
    return { name, text: name };
  }
  const name = `TPM_RC_UNKNOWN_0x${rc.toString(16)}`;
  return { name, text: `${name} (TPM 1.2 style code)` };
}
