import { describe, expect, it } from 'vitest';
import { pemBlocks } from './pem.js';

describe('pemBlocks', () => {
  it('reads every block in order and ignores text between them', () => {
    const text = `leading text\n-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\nmiddle\n-----BEGIN X509 CRL-----\nBAUG\nBw==\n-----END X509 CRL-----\n`;
    expect(pemBlocks(text)).toEqual([
      { label: 'CERTIFICATE', der: Buffer.from([1, 2, 3]) },
      { label: 'X509 CRL', der: Buffer.from([4, 5, 6, 7]) },
    ]);
  });

  it('refuses a block whose END label differs or whose body is not base64', () => {
    expect(() => pemBlocks('-----BEGIN CERTIFICATE-----\nAQID\n-----END PRIVATE KEY-----')).toThrow(
      'PEM block "CERTIFICATE" ends with "PRIVATE KEY"',
    );
    expect(() => pemBlocks('-----BEGIN CERTIFICATE-----\nAQ*D\n-----END CERTIFICATE-----')).toThrow(
      'PEM block "CERTIFICATE" is not base64',
    );
    expect(pemBlocks('no blocks here')).toEqual([]);
  });
});
