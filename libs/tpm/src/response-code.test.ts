import { describe, expect, it } from 'vitest';
import { describeResponseCode } from './response-code.js';

describe('describeResponseCode', () => {
  it.each([
    [0x000, 'TPM_RC_SUCCESS', 'TPM_RC_SUCCESS'],
    [0x100, 'TPM_RC_INITIALIZE', 'TPM_RC_INITIALIZE'],
    [0x902, 'TPM_RC_OBJECT_MEMORY', 'TPM_RC_OBJECT_MEMORY'],
    [0x98e, 'TPM_RC_AUTH_FAIL', 'TPM_RC_AUTH_FAIL in session 1'],
    [0x1c4, 'TPM_RC_VALUE', 'TPM_RC_VALUE in parameter 1'],
    [0x18b, 'TPM_RC_HANDLE', 'TPM_RC_HANDLE in handle 1'],
    [0x2c3, 'TPM_RC_HASH', 'TPM_RC_HASH in parameter 2'],
    [0x922, 'TPM_RC_RETRY', 'TPM_RC_RETRY'],
  ])('decodes 0x%s', (code, name, text) => {
    expect(describeResponseCode(code)).toEqual({ name, text });
  });

  it('names unknown and vendor codes instead of failing', () => {
    expect(describeResponseCode(0x17f).name).toBe('TPM_RC_UNKNOWN_0x17f');
    expect(describeResponseCode(0x500).name).toBe('TPM_RC_VENDOR_0x500');
  });
});
