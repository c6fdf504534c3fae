import { X509Certificate, createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import type { KeyObject, webcrypto as WebCrypto } from 'node:crypto';
import { webcrypto } from 'node:crypto';
import { AsnConvert, AsnParser } from '@peculiar/asn1-schema';
import { Certificate } from '@peculiar/asn1-x509';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runChecked, tempDirForTest } from '@constellation/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { verifyEkCertificate } from './ek-certificate.js';
import { pemCertificatesToDer } from './pem.js';
import type { VerifyEkCertificateOptions } from './ek-certificate.js';
import { AttestationError } from './errors.js';
import { pemBlocks } from './pem.js';
import { x509 } from './x509.fixture.js';

/*
 * EK certificate paths as a network attacker without a TPM (attacker 1) might present them, and
 * certificates that OpenSSL and the ASN.1 parser could read differently. Certificates are built
 * with @peculiar/x509 (independent of the code under test) and, where a test needs bytes no
 * builder writes, re-signed from their ASN.1 parts with Node's crypto.
 */

const DAY = 24 * 3600_000;
const ECDSA = { name: 'ECDSA', hash: 'SHA-256' };
const validity = { notBefore: new Date(Date.now() - DAY), notAfter: new Date(Date.now() + 365 * DAY) };

interface Ca {
  cert: x509.X509Certificate;
  keys: WebCrypto.CryptoKeyPair;
}

let serialCounter = 1;
const serial = (): string => `01${(serialCounter++).toString(16).padStart(8, '0')}`;
const keys = (): Promise<WebCrypto.CryptoKeyPair> =>
  webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
const caExtensions = (): x509.Extension[] => [
  new x509.BasicConstraintsExtension(true, undefined, true),
  new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
];

async function root(name: string): Promise<Ca> {
  const k = await keys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name,
    keys: k,
    signingAlgorithm: ECDSA,
    extensions: caExtensions(),
    ...validity,
  });
  return { cert, keys: k };
}

async function issued(issuer: Ca, subject: string | x509.Name, extensions: x509.Extension[]): Promise<Ca> {
  const k = await keys();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject,
    issuer: issuer.cert.subjectName,
    publicKey: k.publicKey,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: ECDSA,
    extensions,
    ...validity,
  });
  return { cert, keys: k };
}

const der = (cert: x509.X509Certificate): Buffer => Buffer.from(new Uint8Array(cert.rawData));
const ekUsage = (): x509.Extension => new x509.ExtendedKeyUsageExtension(['2.23.133.8.1']);

async function privateKeyOf(ca: Ca): Promise<KeyObject> {
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', ca.keys.privateKey);
  return createPrivateKey({ key: Buffer.from(pkcs8), format: 'der', type: 'pkcs8' });
}

/** A DER TLV with a minimal definite length (up to 64 KiB). */
function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  const length =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, content]);
}

/** The certificate with its TBS bytes rewritten by `edit`, signed again by `issuer`. */
async function resigned(cert: x509.X509Certificate, issuer: Ca, edit: (tbs: Buffer) => Buffer): Promise<Buffer> {
  const parsed = AsnParser.parse(cert.rawData, Certificate);
  const tbs = edit(Buffer.from(AsnConvert.serialize(parsed.tbsCertificate)));
  const signature = sign('sha256', tbs, { key: await privateKeyOf(issuer), dsaEncoding: 'der' });
  const algorithm = Buffer.from(AsnConvert.serialize(parsed.signatureAlgorithm));
  return tlv(0x30, Buffer.concat([tbs, algorithm, tlv(0x03, Buffer.concat([Buffer.from([0]), signature]))]));
}

/** The contents of a DER SEQUENCE (after its header). */
function contents(sequence: Buffer): Buffer {
  const first = sequence[1] ?? 0;
  return sequence.subarray(first & 0x80 ? 2 + (first & 0x7f) : 2);
}

async function refusal(options: VerifyEkCertificateOptions): Promise<string> {
  try {
    await verifyEkCertificate(options);
  } catch (err) {
    expect(err).toBeInstanceOf(AttestationError);
    return (err as AttestationError).message;
  }
  throw new Error('verifyEkCertificate accepted the path');
}

let pinned: Ca;
let vendor: Ca;
const ekSpki = (): Buffer =>
  generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ type: 'spki', format: 'der' });

beforeAll(async () => {
  pinned = await root('CN=Attack Root CA, O=Test Manufacturer');
  vendor = await issued(pinned, 'CN=Attack Vendor CA, O=Test Manufacturer', caExtensions());
});

async function ek(issuer: Ca, extensions: x509.Extension[] = [ekUsage()]): Promise<x509.X509Certificate> {
  return x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: '',
    issuer: issuer.cert.subjectName,
    publicKey: ekSpki(),
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: ECDSA,
    extensions,
    ...validity,
  });
}

describe('EK certificate paths read two ways (attacker 1)', () => {
  it('accepts the honest path it builds here (the helpers are sound)', async () => {
    const leaf = await ek(vendor);
    const verified = await verifyEkCertificate({
      certificate: der(leaf),
      intermediates: [der(vendor.cert)],
      roots: [der(pinned.cert)],
    });
    expect(verified.path).toEqual([
      '',
      'CN=Attack Vendor CA, O=Test Manufacturer',
      'CN=Attack Root CA, O=Test Manufacturer',
    ]);
    // The re-signing helper keeps a certificate valid when it changes nothing.
    const same = await resigned(leaf, vendor, (tbs) => tbs);
    await verifyEkCertificate({ certificate: same, intermediates: [der(vendor.cert)], roots: [der(pinned.cert)] });
  });

  it('refuses a CA certificate with two basicConstraints, whichever one a reader takes', async () => {
    // First says CA, second says not: OpenSSL and Go refuse duplicates (RFC 5280 §4.2).
    const twoFaced = await issued(pinned, 'CN=Two Faced CA', [
      ...caExtensions(),
      new x509.BasicConstraintsExtension(false, undefined, true),
    ]);
    const leaf = await ek(twoFaced);
    const message = await refusal({
      certificate: der(leaf),
      intermediates: [der(twoFaced.cert)],
      roots: [der(pinned.cert)],
    });
    expect(message).toMatch(/intermediate CA certificate "CN=Two Faced CA" has extension 2\.5\.29\.19 more than once/);
  });

  it('refuses an EK certificate with two extendedKeyUsage extensions', async () => {
    const leaf = await ek(vendor, [ekUsage(), new x509.ExtendedKeyUsageExtension(['1.3.6.1.5.5.7.3.1'])]);
    const message = await refusal({
      certificate: der(leaf),
      intermediates: [der(vendor.cert)],
      roots: [der(pinned.cert)],
    });
    expect(message).toMatch(/EK certificate .* has extension 2\.5\.29\.37 more than once/);
  });

  it('sees a critical unknown extension hidden behind a non-critical duplicate', async () => {
    const unknown = (critical: boolean): x509.Extension =>
      new x509.Extension('1.2.3.4.5', critical, new Uint8Array([5, 0]));
    const leaf = await ek(vendor, [ekUsage(), unknown(false), unknown(true)]);
    const message = await refusal({
      certificate: der(leaf),
      intermediates: [der(vendor.cert)],
      roots: [der(pinned.cert)],
    });
    expect(message).toMatch(/1\.2\.3\.4\.5/);
  });

  it('refuses extension values a lenient reader would take for more: padding bits, trailing bytes, bad text', async () => {
    const refusedCa = async (name: string, extensions: x509.Extension[]): Promise<string> => {
      const ca = await issued(pinned, name, extensions);
      return refusal({ certificate: der(await ek(ca)), intermediates: [der(ca.cert)], roots: [der(pinned.cert)] });
    };
    const basicConstraintsCa = new x509.BasicConstraintsExtension(true, undefined, true);
    // keyUsage with 3 unused bits, keyCertSign (bit 5) set among them: a reader ignoring the
    // unused-bits count sees keyCertSign; OpenSSL clears those bits, Go refuses the padding.
    const paddedKeyUsage = new x509.Extension('2.5.29.15', true, Buffer.from([0x03, 0x02, 0x03, 0x04]));
    expect(await refusedCa('CN=Padded Usage CA', [basicConstraintsCa, paddedKeyUsage])).toMatch(
      /intermediate CA certificate "CN=Padded Usage CA" has a malformed extension 2\.5\.29\.15/,
    );
    // basicConstraints cA TRUE followed by bytes outside its SEQUENCE.
    const trailing = new x509.Extension(
      '2.5.29.19',
      true,
      Buffer.from([0x30, 0x03, 0x01, 0x01, 0xff, 0x30, 0x03, 0x01, 0x01, 0x00]),
    );
    expect(await refusedCa('CN=Trailing CA', [trailing, caExtensions()[1] as x509.Extension])).toMatch(
      /"CN=Trailing CA" has a malformed extension 2\.5\.29\.19/,
    );
    // cA as a BER boolean (0x01, not DER's 0xff), and a negative pathLenConstraint.
    for (const value of [
      [0x30, 0x03, 0x01, 0x01, 0x01],
      [0x30, 0x06, 0x01, 0x01, 0xff, 0x02, 0x01, 0xff],
    ]) {
      const odd = new x509.Extension('2.5.29.19', true, Buffer.from(value));
      expect(await refusedCa('CN=Odd Constraints CA', [odd, caExtensions()[1] as x509.Extension])).toMatch(
        /has a malformed extension 2\.5\.29\.19/,
      );
    }
    // The EK's TPM identity in a subjectAltName directoryName whose UTF8String is not UTF-8.
    const badText = tlv(
      0x30,
      tlv(
        0xa4,
        tlv(
          0x30,
          tlv(
            0x31,
            tlv(
              0x30,
              Buffer.concat([
                tlv(0x06, Buffer.from([0x67, 0x81, 0x05, 0x02, 0x01])),
                tlv(0x0c, Buffer.from([0xc3, 0x28])),
              ]),
            ),
          ),
        ),
      ),
    );
    const leaf = await ek(vendor, [ekUsage(), new x509.Extension('2.5.29.17', true, badText)]);
    expect(
      await refusal({ certificate: der(leaf), intermediates: [der(vendor.cert)], roots: [der(pinned.cert)] }),
    ).toMatch(/EK certificate \(empty subject, serial [0-9a-f]+\) has a malformed extension 2\.5\.29\.17/);
  });

  it('refuses data inside the TBS after its last field, signed by the issuer', async () => {
    const leaf = await ek(vendor);
    const padded = await resigned(leaf, vendor, (tbs) =>
      tlv(0x30, Buffer.concat([contents(tbs), Buffer.from([0x05, 0x00])])),
    );
    const message = await refusal({
      certificate: padded,
      intermediates: [der(vendor.cert)],
      roots: [der(pinned.cert)],
    });
    expect(message).toMatch(/EK certificate is not a well-formed DER X\.509 certificate/);
  });

  it('refuses an EK certificate whose outer length is not DER (one certificate, one encoding)', async () => {
    const leaf = der(await ek(vendor));
    const body = contents(leaf);
    const longer = Buffer.concat([Buffer.from([0x30, 0x84, 0, 0, body.length >> 8, body.length & 0xff]), body]);
    const message = await refusal({
      certificate: longer,
      intermediates: [der(vendor.cert)],
      roots: [der(pinned.cert)],
    });
    expect(message).toMatch(/EK certificate is not DER-encoded/);
  });

  it('refuses a certificate whose outer signatureAlgorithm is not the one its signed part names', async () => {
    // The outer algorithm is outside the signature: ECDSA with SHA-384 over a signature made with
    // SHA-256 would never verify, but a reader that took the outer one for other purposes could be
    // told anything. RFC 5280 §4.1.1.2: the two must be identical.
    const leaf = der(await ek(vendor));
    const sha256 = Buffer.from('300a06082a8648ce3d040302', 'hex');
    const sha384 = Buffer.from('300a06082a8648ce3d040303', 'hex');
    const at = leaf.lastIndexOf(sha256);
    const swapped = Buffer.concat([leaf.subarray(0, at), sha384, leaf.subarray(at + sha256.length)]);
    const message = await refusal({
      certificate: swapped,
      intermediates: [der(vendor.cert)],
      roots: [der(pinned.cert)],
    });
    expect(message).toMatch(
      /EK certificate is not a well-formed DER X\.509 certificate \(signatureAlgorithm differs from the signature field of the signed part\)/,
    );
  });

  it('verifies an RSASSA-PSS-signed path through OpenSSL, and refuses it when the signature is broken', async () => {
    // PSS is not among the algorithms checked directly: OpenSSL's X.509 verification takes it.
    const dir = await tempDirForTest();
    const path = (name: string): string => join(dir, name);
    await writeFile(path('ext'), 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n');
    await writeFile(path('ek-ext'), 'extendedKeyUsage=2.23.133.8.1\n');
    const openssl = (...args: string[]): Promise<unknown> => runChecked('openssl', args, { timeoutMs: 30_000 });
    await openssl('genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', path('ca.key'));
    await openssl(
      'req',
      '-x509',
      '-new',
      '-key',
      path('ca.key'),
      '-subj',
      '/CN=PSS Root CA',
      '-days',
      '30',
      '-sigopt',
      'rsa_padding_mode:pss',
      '-sha256',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign',
      '-out',
      path('ca.crt'),
    );
    await openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', path('ek.key'));
    await openssl('req', '-new', '-key', path('ek.key'), '-subj', '/CN=PSS EK', '-out', path('ek.csr'));
    await openssl(
      'x509',
      '-req',
      '-in',
      path('ek.csr'),
      '-CA',
      path('ca.crt'),
      '-CAkey',
      path('ca.key'),
      '-CAcreateserial',
      '-days',
      '30',
      '-sigopt',
      'rsa_padding_mode:pss',
      '-sha256',
      '-extfile',
      path('ek-ext'),
      '-outform',
      'DER',
      '-out',
      path('ek.der'),
    );
    const root = new X509Certificate(await readFile(path('ca.crt'))).raw;
    const leaf = await readFile(path('ek.der'));
    expect(leaf.includes(Buffer.from('06092a864886f70d01010a', 'hex'))).toBe(true); // id-RSASSA-PSS
    const verified = await verifyEkCertificate({ certificate: leaf, intermediates: [], roots: [root] });
    expect(verified.path).toEqual(['CN=PSS EK', 'CN=PSS Root CA']);
    const broken = Buffer.from(leaf);
    broken[broken.length - 1] = (broken[broken.length - 1] ?? 0) ^ 1;
    expect(await refusal({ certificate: broken, intermediates: [], roots: [root] })).toMatch(
      /signature of "CN=PSS EK" does not verify with pinned root certificate "CN=PSS Root CA"/,
    );
  });

  it('tries a same-named impostor issuer, and still takes the genuine one by its signature', async () => {
    // Same text, other string type: UTF8String instead of the genuine PrintableString.
    const printable = new x509.Name([
      { '2.5.4.3': [{ utf8String: 'Attack Vendor CA' }] },
      { '2.5.4.10': [{ utf8String: 'Test Manufacturer' }] },
    ]);
    expect(printable.toString()).toBe(vendor.cert.subject);
    expect(Buffer.from(printable.toArrayBuffer()).equals(Buffer.from(vendor.cert.subjectName.toArrayBuffer()))).toBe(
      false,
    );
    const impostorRoot = await root('CN=Impostor Root');
    const impostor = await issued(impostorRoot, printable, caExtensions());
    const leaf = await ek(vendor);
    const verified = await verifyEkCertificate({
      certificate: der(leaf),
      intermediates: [der(impostor.cert), der(vendor.cert)],
      roots: [der(pinned.cert)],
    });
    expect(verified.path[2]).toBe('CN=Attack Root CA, O=Test Manufacturer');
    // Alone, the impostor is named in the refusal, not accepted for its name.
    const message = await refusal({
      certificate: der(leaf),
      intermediates: [der(impostor.cert)],
      roots: [der(pinned.cert)],
    });
    expect(message).toMatch(
      /signature of .* does not verify with intermediate CA certificate "CN=Attack Vendor CA, O=Test Manufacturer"/,
    );
  });

  it('does not let a multi-valued RDN pass for two RDNs, or an escaped value for a separator', async () => {
    const multi = await issued(pinned, 'CN=Attack Vendor CA+O=Test Manufacturer', caExtensions());
    const escaped = await issued(pinned, 'CN=Attack Vendor CA\\, O=Test Manufacturer', caExtensions());
    expect(new Set([multi.cert.subject, escaped.cert.subject, vendor.cert.subject]).size).toBe(3);
    const leaf = await ek(vendor);
    for (const lookalike of [multi, escaped]) {
      const message = await refusal({
        certificate: der(leaf),
        intermediates: [der(lookalike.cert)],
        roots: [der(pinned.cert)],
      });
      expect(message).toMatch(
        /issuer "CN=Attack Vendor CA, O=Test Manufacturer" is neither a pinned root nor a supplied intermediate/,
      );
    }
  });
});

describe('PEM bundles', () => {
  it('refuses mismatched, nested and unterminated blocks, saying which', () => {
    const body = Buffer.from(new X509Certificate(der(pinned.cert)).raw).toString('base64');
    expect(() => pemCertificatesToDer(`-----BEGIN CERTIFICATE-----\n${body}\n-----END PRIVATE KEY-----\n`)).toThrow(
      /PEM block "CERTIFICATE" ends with "PRIVATE KEY"/,
    );
    expect(() =>
      pemCertificatesToDer(
        `-----BEGIN CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n-----END CERTIFICATE-----\n`,
      ),
    ).toThrow(/PEM block "CERTIFICATE" is not base64/);
    // A bundle cut short must not silently lose its last certificate.
    expect(() =>
      pemCertificatesToDer(
        `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\n${body.slice(0, 64)}\n`,
      ),
    ).toThrow(/PEM block "CERTIFICATE" has no END line/);
    expect(() => pemCertificatesToDer(`-----BEGIN PRIVATE KEY-----\n${body}\n-----END PRIVATE KEY-----\n`)).toThrow(
      /PEM block 1 is "PRIVATE KEY", expected "CERTIFICATE"/,
    );
  });

  it('reads a huge hostile bundle in linear time', () => {
    const text = '-----BEGIN CERTIFICATE-----\nAAAA\n'.repeat(32_000);
    const started = Date.now();
    expect(() => pemBlocks(text)).toThrow(/PEM block/);
    expect(Date.now() - started).toBeLessThan(500);
  });
});
