import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DerError,
  DerFields,
  TAG,
  children,
  decodeBoolean,
  decodeNamedBits,
  decodeOid,
  decodeSmallNonNegativeInteger,
  readExtension,
  readOnly,
  readTlv,
} from './der-reader.js';
import { decodeTime, encodeTime } from './der-time.js';
import {
  bitString,
  boolean,
  integer,
  namedBits,
  octetString,
  oid,
  sequence,
  set,
  smallInteger,
  tlv,
} from './der-writer.js';
import { pemBlock } from './pem.js';
import { readCanonicalSpki, spkiKeyJwk } from './subject-public-key.js';
import { attributeValueText, directoryStringText, generalNameKind, readNameAttributes } from './x509-name.js';
import type { SpkiKey } from './subject-public-key.js';

const bytes = (hex: string): Buffer => Buffer.from(hex.replace(/\s/g, ''), 'hex');

describe('DER reader', () => {
  it('reads what the writer writes, in short and long length forms', () => {
    for (const size of [0, 1, 127, 128, 255, 256, 65_535, 65_536]) {
      const encoded = octetString(Buffer.alloc(size, 7));
      const item = readOnly(encoded, TAG.octetString, 'value');
      expect(item.content.length).toBe(size);
      expect(item.raw.equals(encoded)).toBe(true);
    }
  });

  it('refuses encodings that are BER but not DER, naming the rule', () => {
    expect(() => readTlv(bytes('04 80 00 00'))).toThrow(/unsupported DER length encoding \(0x80\)/); // indefinite
    expect(() => readTlv(bytes('04 81 05 0102030405'))).toThrow(/fits the short form/);
    expect(() => readTlv(bytes('04 82 0081' + '00'.repeat(0x81)))).toThrow(/leading zero octet/);
    expect(() => readTlv(bytes('1f 22 01 00'))).toThrow(/high tag number/);
    expect(() => readTlv(bytes('04 05 0102'))).toThrow(/runs past the end/);
    expect(() => readOnly(bytes('04 01 00 00'), TAG.octetString, 'the value')).toThrow(
      'the value is followed by 1 bytes',
    );
    expect(() => decodeBoolean(readTlv(bytes('01 01 01')))).toThrow(/neither 0x00 nor 0xff/);
    expect(() => decodeOid(bytes('2a 80 01'))).toThrow(/leading 0x80/);
    expect(() => decodeOid(bytes('2a 86'))).toThrow(/ends inside an arc/);
  });

  it('reads fields in order and says which one is missing or wrong', () => {
    const value = sequence(smallInteger(2), boolean(true));
    const fields = new DerFields(readOnly(value, TAG.sequence, 'thing').content, 'thing');
    expect(fields.next(TAG.integer, 'version').content).toEqual(Buffer.from([2]));
    expect(fields.optional(TAG.octetString)).toBeUndefined();
    expect(decodeBoolean(fields.next(TAG.boolean, 'flag'))).toBe(true);
    fields.end();
    expect(() => fields.next(TAG.integer, 'serial')).toThrow('thing: serial is missing');
    const wrong = new DerFields(readOnly(value, TAG.sequence, 'thing').content, 'thing');
    expect(() => wrong.next(TAG.oid, 'algorithm')).toThrow('thing: algorithm should have tag 0x06, has 0x02');
    const extra = new DerFields(readOnly(value, TAG.sequence, 'thing').content, 'thing');
    extra.next(TAG.integer, 'version');
    expect(() => {
      extra.end();
    }).toThrow('thing has 3 bytes after its last field');
  });

  it('throws nothing but DerError on arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (input) => {
        try {
          for (const item of children(Buffer.from(input))) {
            if (item.tag === TAG.oid) decodeOid(item.content);
            if ((item.tag & 0x20) !== 0) children(item.content);
          }
        } catch (err) {
          expect(err).toBeInstanceOf(DerError);
        }
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('named bits and small integers', () => {
  it('reads back the named bits the writer writes, and refuses padding that is not zero', () => {
    for (const bits of [[], [0], [0, 2], [5, 6, 0], [8], [15, 1]]) {
      expect([...decodeNamedBits(readTlv(namedBits(bits)), 'bits')].sort((a, b) => a - b)).toEqual(
        [...bits].sort((a, b) => a - b),
      );
    }
    // keyCertSign (bit 5) hidden in 3 unused bits; more than 7 unused; unused bits with no octet.
    for (const hex of ['03020304', '03020800', '030103', '0300']) {
      expect(() => decodeNamedBits(readTlv(bytes(hex)), 'keyUsage')).toThrow(DerError);
    }
  });

  it('reads non-negative integers that fit a number, minimally encoded', () => {
    for (const value of [0, 1, 127, 128, 255, 0x7fffffff, 0xffffffff]) {
      const encoded = value > 0x7fffffff ? bytes('020500ffffffff') : smallInteger(value);
      expect(decodeSmallNonNegativeInteger(readTlv(encoded), 'n')).toBe(value);
    }
    expect(() => decodeSmallNonNegativeInteger(readTlv(bytes('020200 7f')), 'n')).toThrow(/not minimal/);
    expect(() => decodeSmallNonNegativeInteger(readTlv(bytes('0201ff')), 'n')).toThrow(/negative/);
    expect(() => decodeSmallNonNegativeInteger(readTlv(bytes('02050100000000')), 'n')).toThrow(/too large/);
    expect(() => decodeSmallNonNegativeInteger(readTlv(bytes('0200')), 'n')).toThrow(/not an INTEGER/);
  });
});

describe('X.509 names', () => {
  const attribute = (type: string, value: Buffer): Buffer => sequence(oid(type), value);

  it('reads RDNs and their attributes in order, and the text of every directory string type', () => {
    const name = sequence(
      set(attribute('2.5.4.3', tlv(0x0c, Buffer.from('Grüße', 'utf8')))),
      set(attribute('2.5.4.10', tlv(0x13, Buffer.from('Org'))), attribute('2.5.4.11', tlv(0x16, Buffer.from('a@b')))),
    );
    const rdns = readNameAttributes(readTlv(name));
    expect(rdns.map((rdn) => rdn.map(({ type, value }) => `${type}=${String(directoryStringText(value))}`))).toEqual([
      ['2.5.4.3=Grüße'],
      ['2.5.4.10=Org', '2.5.4.11=a@b'],
    ]);
    const text = (tag: number, hex: string): string | undefined => directoryStringText(readTlv(tlv(tag, bytes(hex))));
    expect(text(0x1e, '00470072 00fc')).toBe('Grü'); // BMPString: UCS-2 big-endian
    expect(text(0x1c, '0001f600 00000041')).toBe('😀A'); // UniversalString: UCS-4 big-endian
    expect(text(0x14, 'e9')).toBe('é'); // TeletexString read as Latin-1
    expect(text(0x02, '01')).toBeUndefined(); // not a string: the caller writes '#' and hex
    expect(attributeValueText(readTlv(tlv(0x02, bytes('01'))))).toBe('#020101');
    expect(attributeValueText(readTlv(tlv(0x0c, Buffer.from('a,b'))))).toBe('a,b');
  });

  it('refuses names and strings that are not well formed, saying what', () => {
    expect(() => readNameAttributes(readTlv(bytes('3100')))).toThrow(/not a SEQUENCE/);
    expect(() => readNameAttributes(readTlv(sequence(sequence())))).toThrow(/not a SET/);
    expect(() => readNameAttributes(readTlv(sequence(set(sequence(oid('2.5.4.3'))))))).toThrow(/value is missing/);
    const extra = sequence(set(sequence(oid('2.5.4.3'), tlv(0x0c, Buffer.from('a')), tlv(0x0c, Buffer.from('b')))));
    expect(() => readNameAttributes(readTlv(extra))).toThrow(/after its last field/);
    expect(() => directoryStringText(readTlv(bytes('0c02c328')))).toThrow(/not valid UTF-8/);
    expect(() => directoryStringText(readTlv(bytes('1e03004100')))).toThrow(/odd number/);
    expect(() => directoryStringText(readTlv(bytes('1c03000041')))).toThrow(/multiple of 4/);
    expect(() => directoryStringText(readTlv(bytes('1c0400110000')))).toThrow(/not a code point/);
  });

  it('names the GeneralName alternatives by tag (RFC 5280 §4.2.1.6)', () => {
    expect([0x82, 0x87, 0xa4, 0x81, 0x86].map(generalNameKind)).toEqual(['dns', 'ip', 'directoryName', 'email', 'url']);
    expect(generalNameKind(0x30)).toBeUndefined();
  });
});

describe('DER writer', () => {
  it('writes OIDs, integers and named bits as X.690 and RFC 5280 examples give them', () => {
    expect(oid('1.2.840.10045.4.3.2').toString('hex')).toBe('06082a8648ce3d040302');
    expect(decodeOid(readTlv(oid('2.5.29.17')).content)).toBe('2.5.29.17');
    expect(decodeOid(readTlv(oid('2.999.1')).content)).toBe('2.999.1');
    expect(integer(Buffer.from([0x00, 0x00, 0x7f])).toString('hex')).toBe('02017f');
    expect(integer(Buffer.from([0x80])).toString('hex')).toBe('02020080');
    expect(smallInteger(2).toString('hex')).toBe('020102');
    expect(smallInteger(0).toString('hex')).toBe('020100');
    // keyUsage digitalSignature; digitalSignature + keyEncipherment; keyCertSign + cRLSign + digitalSignature
    expect(namedBits([0]).toString('hex')).toBe('03020780');
    expect(namedBits([0, 2]).toString('hex')).toBe('030205a0');
    expect(namedBits([5, 6, 0]).toString('hex')).toBe('03020186');
    expect(namedBits([8]).toString('hex')).toBe('0303070080');
    expect(() => oid('3.1')).toThrow(RangeError);
    expect(() => tlv(4, Buffer.alloc(0x1000000))).toThrow(RangeError);
  });
});

describe('certificate times (RFC 5280 §4.1.2.5)', () => {
  it('writes UTCTime through 2049 and GeneralizedTime from 2050, and reads both back', () => {
    const before = new Date('2049-12-31T23:59:59Z');
    const after = new Date('2050-01-01T00:00:00Z');
    expect(encodeTime(before).toString('latin1').slice(2)).toBe('491231235959Z');
    expect(encodeTime(before)[0]).toBe(TAG.utcTime);
    expect(encodeTime(after).toString('latin1').slice(2)).toBe('20500101000000Z');
    expect(encodeTime(after)[0]).toBe(TAG.generalizedTime);
    for (const date of [before, after, new Date('1970-01-01T00:00:00Z'), new Date('1999-06-30T12:00:01Z')]) {
      expect(decodeTime(readTlv(encodeTime(date)), 'time')).toBe(date.getTime());
    }
  });

  it('refuses times RFC 5280 does not allow, and dates that do not exist', () => {
    const utc = (text: string): Buffer => tlv(TAG.utcTime, Buffer.from(text, 'latin1'));
    expect(() => decodeTime(readTlv(utc('2402301200Z')), 'notBefore')).toThrow(/notBefore is not an RFC 5280/); // no seconds
    expect(() => decodeTime(readTlv(utc('240230120000+0100')), 'notBefore')).toThrow(/not an RFC 5280/); // offset
    expect(() => decodeTime(readTlv(utc('240230120000Z')), 'notAfter')).toThrow('notAfter is not a valid date');
    expect(() => decodeTime(readTlv(tlv(TAG.generalizedTime, Buffer.from('20240101000000.5Z'))), 't')).toThrow(
      /not an RFC 5280/,
    );
  });
});

describe('canonical SubjectPublicKeyInfo', () => {
  it('reads RSA and P-256/P-384 keys exactly as OpenSSL writes them, and their JWK is the same key', () => {
    const keys = [
      generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey,
      generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 3 }).publicKey,
      generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey,
      generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey,
    ];
    for (const key of keys) {
      const spki = key.export({ type: 'spki', format: 'der' });
      const read = readCanonicalSpki(spki);
      expect(read).toBeDefined();
      const again = createPublicKey({ key: spkiKeyJwk(read as SpkiKey), format: 'jwk' });
      expect(again.export({ type: 'spki', format: 'der' }).equals(spki)).toBe(true);
      expect(spkiKeyJwk(read as SpkiKey)).toEqual(key.export({ format: 'jwk' }));
    }
  });

  it('leaves every other form to OpenSSL: compressed points, explicit parameters, other curves, padded integers', () => {
    const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    const point = Buffer.from(p256.export({ type: 'spki', format: 'der' }).subarray(-65));
    const algorithm = sequence(oid('1.2.840.10045.2.1'), oid('1.2.840.10045.3.1.7'));
    const shortPoint = Buffer.concat([Buffer.from([0x02 | ((point[64] ?? 0) & 1)]), point.subarray(1, 33)]);
    expect(readCanonicalSpki(sequence(algorithm, bitString(shortPoint)))).toBeUndefined();
    expect(
      readCanonicalSpki(sequence(sequence(oid('1.2.840.10045.2.1'), oid('1.3.132.0.10')), bitString(point))),
    ).toBeUndefined(); // secp256k1
    const rsa = (n: Buffer, withNull = true): Buffer =>
      sequence(
        sequence(oid('1.2.840.113549.1.1.1'), ...(withNull ? [Buffer.from([5, 0])] : [])),
        bitString(sequence(tlv(TAG.integer, n), integer(Buffer.from([1, 0, 1])))),
      );
    const modulus = Buffer.concat([Buffer.from([0x00, 0xc0]), Buffer.alloc(255, 1)]);
    expect(readCanonicalSpki(rsa(modulus))).toMatchObject({ type: 'rsa' });
    expect(readCanonicalSpki(rsa(modulus, false))).toBeUndefined();
    expect(readCanonicalSpki(rsa(Buffer.concat([Buffer.from([0]), modulus])))).toBeUndefined(); // padded
    expect(readCanonicalSpki(rsa(modulus.subarray(1)))).toBeUndefined(); // negative
    expect(readCanonicalSpki(Buffer.concat([rsa(modulus), Buffer.from([0])]))).toBeUndefined(); // trailing byte
    expect(readCanonicalSpki(Buffer.from('garbage'))).toBeUndefined();
  });
});

describe('X.509 extensions', () => {
  it('reads extnID, criticality and value, and reports an encoded critical FALSE', () => {
    const value = sequence(oid('1.2.3'));
    const read = (der: Buffer): ReturnType<typeof readExtension> => readExtension(readTlv(der));
    expect(read(sequence(oid('2.5.29.19'), boolean(true), octetString(value)))).toMatchObject({
      extnID: '2.5.29.19',
      critical: true,
      explicitFalse: false,
    });
    expect(read(sequence(oid('2.5.29.17'), octetString(value))).extnValue.equals(value)).toBe(true);
    expect(read(sequence(oid('2.5.29.17'), boolean(false), octetString(value)))).toMatchObject({
      critical: false,
      explicitFalse: true,
    });
    expect(() => read(sequence(oid('2.5.29.17')))).toThrow('extension: extnValue is missing');
    expect(() => read(set(oid('2.5.29.17')))).toThrow('extension should have tag 0x30, has 0x31');
  });
});

describe('pemBlock', () => {
  it('writes 64-column lines and no empty line, also when the body fills its last line (pem.EncodeToMemory)', () => {
    // 96 bytes are 128 base64 characters: exactly two full lines.
    const full = pemBlock('CERTIFICATE REQUEST', Buffer.alloc(96, 1));
    expect(full.split('\n')).toEqual([
      '-----BEGIN CERTIFICATE REQUEST-----',
      'AQEB'.repeat(16),
      'AQEB'.repeat(16),
      '-----END CERTIFICATE REQUEST-----',
    ]);
    expect(pemBlock('CERTIFICATE', Buffer.from([1, 2]))).toBe(
      '-----BEGIN CERTIFICATE-----\nAQI=\n-----END CERTIFICATE-----',
    );
  });
});
