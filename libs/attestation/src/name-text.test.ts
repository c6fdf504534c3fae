import { readTlv } from '@constellation/der';
import { describe, expect, it } from 'vitest';
import { nameText } from './name-text.js';
import { x509 } from './x509.fixture.js';

describe('nameText', () => {
  // @peculiar/x509 wrote these names before; path building compares names as this text.
  it.each([
    'CN=Test TPM Root CA, O=Test Manufacturer',
    'C=DE, ST=Bavaria, L=Munich, O=Infineon Technologies AG, OU=OPTIGA(TM), CN=Infineon OPTIGA(TM) RSA Manufacturing CA 003',
    'CN=a\\, b, O=x\\+y, OU=\\#hash, T=trailing\\ ',
    'CN=one+O=two, 2.23.133.2.1=id:00001014',
    'E=ca@example.org, DC=example, DC=org, SN=Doe, G=Jane, I=J',
  ])('writes %s as @peculiar/x509 does', (text) => {
    const der = new x509.Name(text).toArrayBuffer();
    expect(nameText(readTlv(Buffer.from(der)))).toBe(new x509.Name(der).toString());
    expect(nameText(readTlv(Buffer.from(der)))).toBe(text);
  });

  it('writes an empty name as empty text', () => {
    expect(nameText(readTlv(Buffer.from([0x30, 0x00])))).toBe('');
  });
});
