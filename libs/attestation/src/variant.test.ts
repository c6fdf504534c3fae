import { describe, expect, it } from 'vitest';
import { DummyIssuer, DummyValidator } from './testing/dummy.js';
import { variantByName, variantByOid } from './variant.js';

describe('variants', () => {
  it('knows qemu-vtpm by name and OID', () => {
    expect(variantByName('qemu-vtpm').oid).toBe('1.3.9900.5.1');
    expect(variantByOid('1.3.9900.5.1')?.name).toBe('qemu-vtpm');
    expect(variantByOid('1.2.3')).toBeUndefined();
  });

  it('never hands out the dummy variant to configuration, and lists what is allowed', () => {
    expect(() => variantByName('dummy')).toThrow(
      'attestation variant "dummy" is for tests only and proves nothing; expected one of: tpm2-ek, qemu-vtpm',
    );
    expect(() => variantByName('azure-sev-snp')).toThrow(
      'unknown attestation variant "azure-sev-snp"; expected one of: tpm2-ek, qemu-vtpm',
    );
    expect(variantByName('dummy', { allowTestOnly: true }).testOnly).toBe(true);
  });

  it('dummy documents still bind nonce and user data', async () => {
    const nonce = Buffer.alloc(32, 1);
    const document = await new DummyIssuer().issue(Buffer.from('key'), nonce);
    const validator = new DummyValidator();
    expect(validator.validate(document, nonce, Buffer.from('key'))).toMatchObject({
      userData: Buffer.from('key'),
    });
    expect(() => validator.validate(document, Buffer.alloc(32, 2))).toThrow(/not bound to this nonce/);
    expect(() => validator.validate(document, nonce, Buffer.from('other'))).toThrow(/does not match/);
    expect(() => validator.validate(document.subarray(1), nonce)).toThrow(/malformed/);
  });
});
