import { ECDH, createPrivateKey, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CertificationRequestInfo } from '@peculiar/asn1-csr';
import { AsnConvert, AsnParser, OctetString } from '@peculiar/asn1-schema';
import {
  Attribute,
  AttributeTypeAndValue,
  AttributeValue,
  Extension,
  Extensions,
  GeneralName,
  Name,
  OtherName,
  RelativeDistinguishedName,
  SubjectAlternativeName,
  SubjectPublicKeyInfo,
} from '@peculiar/asn1-x509';
import { runCommand, tempDirForTest } from '@constellation/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { CertificateAuthority } from './certificate-authority.js';
import { CsrError, checkKubeletClientRequest, checkKubeletServingRequest } from './kubelet-csr-checks.js';

/*
 * Kubelet CSRs as the owner of one genuine node may shape them (attacker 2), byte by byte: built
 * here from ASN.1 parts and signed with Node's crypto, independently of the CA's own encoder.
 * Every refusal is a CsrError saying why; nothing else may escape the checks.
 */

const EXTENSION_REQUEST = '1.2.840.113549.1.9.14';
const SAN = '2.5.29.17';
const ECDSA_SHA256 = '1.2.840.10045.4.3.2';
const RSA_SHA256 = '1.2.840.113549.1.1.11';

const ec = (): { publicKey: KeyObject; privateKey: KeyObject } =>
  generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
let rsa: { publicKey: KeyObject; privateKey: KeyObject };

let ca: CertificateAuthority;
let caPem: string;
beforeAll(async () => {
  rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const generated = await CertificateAuthority.generate('kubernetes');
  ca = generated.ca;
  caPem = generated.certificatePem;
});

/** A DER TLV with a minimal definite length. */
function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  const length =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, content]);
}

const attribute = (type: string, value: AttributeValue): AttributeTypeAndValue =>
  new AttributeTypeAndValue({ type, value });
const utf8 = (value: string): AttributeValue => new AttributeValue({ utf8String: value });
const O = (value: string): AttributeTypeAndValue => attribute('2.5.4.10', utf8(value));
const CN = (value: string): AttributeTypeAndValue => attribute('2.5.4.3', utf8(value));
const rdns = (...groups: AttributeTypeAndValue[][]): Name =>
  new Name(groups.map((group) => new RelativeDistinguishedName(group)));
const nodeSubject = (name = 'worker-1'): Name => rdns([O('system:nodes')], [CN(`system:node:${name}`)]);

/** An extensionRequest attribute holding one Extensions value per entry of `values`. */
function extensionRequest(...values: Extension[][]): Attribute {
  return new Attribute({
    type: EXTENSION_REQUEST,
    values: values.map((extensions) => AsnConvert.serialize(new Extensions(extensions))),
  });
}
const sanExtension = (...names: GeneralName[]): Extension =>
  new Extension({
    extnID: SAN,
    critical: false,
    extnValue: new OctetString(AsnConvert.serialize(new SubjectAlternativeName(names))),
  });
const dns = (dNSName: string): GeneralName => new GeneralName({ dNSName });
/** A SAN extension from raw GeneralName TLVs, so any iPAddress length can be asked for. */
const rawSanExtension = (...names: Buffer[]): Extension =>
  new Extension({ extnID: SAN, critical: false, extnValue: new OctetString(tlv(0x30, Buffer.concat(names))) });
/** iPAddress is [7] IMPLICIT OCTET STRING. */
const ipBytes = (bytes: number[]): Buffer => tlv(0x87, Buffer.from(bytes));
const dnsBytes = (name: string): Buffer => tlv(0x82, Buffer.from(name));

interface Shape {
  subject?: Name;
  attributes?: Attribute[];
  key?: { publicKey: KeyObject; privateKey: KeyObject };
  /** The signature algorithm the request names, whatever key signs it. */
  algorithm?: string;
  /** The AlgorithmIdentifier parameters, DER (NULL for RSA by default). */
  parameters?: Buffer;
  /** The SubjectPublicKeyInfo DER, when not the key's own export (another point encoding, say). */
  spki?: Buffer;
  /** Rewrites the request's DER after signing (trailing bytes, other encodings). */
  outer?: (der: Buffer) => Buffer;
}

/** A signed PKCS#10 request of any shape. */
function csr(shape: Shape = {}): Buffer {
  const key = shape.key ?? ec();
  const info = new CertificationRequestInfo({
    subject: shape.subject ?? nodeSubject(),
    subjectPKInfo: AsnParser.parse(
      shape.spki ?? key.publicKey.export({ type: 'spki', format: 'der' }),
      SubjectPublicKeyInfo,
    ),
  });
  info.attributes.push(...(shape.attributes ?? []));
  const infoDer = Buffer.from(AsnConvert.serialize(info));
  const isRsa = key.privateKey.asymmetricKeyType === 'rsa';
  const algorithm = shape.algorithm ?? (isRsa ? RSA_SHA256 : ECDSA_SHA256);
  const signature = sign('sha256', infoDer, { key: key.privateKey, dsaEncoding: 'der' });
  const algorithmDer = tlv(
    0x30,
    Buffer.concat([oidDer(algorithm), shape.parameters ?? (isRsa ? Buffer.from([0x05, 0x00]) : Buffer.alloc(0))]),
  );
  const der = tlv(
    0x30,
    Buffer.concat([infoDer, algorithmDer, tlv(0x03, Buffer.concat([Buffer.from([0]), signature]))]),
  );
  return shape.outer === undefined ? der : shape.outer(der);
}

/** DER of an OBJECT IDENTIFIER. */
function oidDer(oid: string): Buffer {
  const [first = 0, second = 0, ...rest] = oid.split('.').map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const chunk: number[] = [];
    for (let v = arc; ; v = Math.floor(v / 128)) {
      chunk.unshift((v % 128) | (chunk.length === 0 ? 0 : 0x80));
      if (v < 128) break;
    }
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

function refusal(check: () => unknown): string {
  try {
    check();
  } catch (err) {
    expect(err).toBeInstanceOf(CsrError);
    return (err as Error).message;
  }
  throw new Error('the request was expected to be refused');
}

const registered = { name: 'worker-1', ips: ['10.0.0.1'] };

describe('kubelet CSRs shaped by a node owner (attacker 2)', () => {
  it('accepts the honest shapes it builds here (the helper is sound)', () => {
    expect(checkKubeletClientRequest(csr(), registered).nodeName).toBe('worker-1');
    expect(checkKubeletClientRequest(csr({ key: rsa }), registered).rsa).toBe(true);
    const serving = csr({
      attributes: [extensionRequest([rawSanExtension(dnsBytes('worker-1'), ipBytes([10, 0, 0, 1]))])],
    });
    expect(checkKubeletServingRequest(serving, registered).ips).toEqual(['10.0.0.1']);
  });

  it('refuses a signature algorithm that disagrees with the key, saying which', () => {
    expect(refusal(() => checkKubeletClientRequest(csr({ key: rsa, algorithm: ECDSA_SHA256 })))).toMatch(
      /signature algorithm 1\.2\.840\.10045\.4\.3\.2 is for ec keys, the request's key is rsa/,
    );
    expect(
      refusal(() => checkKubeletClientRequest(csr({ algorithm: RSA_SHA256, parameters: Buffer.from([5, 0]) }))),
    ).toMatch(/signature algorithm 1\.2\.840\.113549\.1\.1\.11 is for rsa keys, the request's key is ec/);
  });

  it('refuses RSA-PSS, Ed25519 and unknown algorithms by name, as CsrError', () => {
    expect(refusal(() => checkKubeletClientRequest(csr({ key: rsa, algorithm: '1.2.840.113549.1.1.10' })))).toMatch(
      /unsupported signature algorithm 1\.2\.840\.113549\.1\.1\.10/,
    );
    expect(
      refusal(() => checkKubeletClientRequest(csr({ algorithm: '1.2.3.4', parameters: Buffer.alloc(0) }))),
    ).toMatch(/unsupported signature algorithm 1\.2\.3\.4/);
    const ed = generateKeyPairSync('ed25519');
    const edRequest = (): Buffer => {
      const info = new CertificationRequestInfo({
        subject: nodeSubject(),
        subjectPKInfo: AsnParser.parse(ed.publicKey.export({ type: 'spki', format: 'der' }), SubjectPublicKeyInfo),
      });
      const infoDer = Buffer.from(AsnConvert.serialize(info));
      const signature = sign(null, infoDer, ed.privateKey);
      return tlv(
        0x30,
        Buffer.concat([
          infoDer,
          tlv(0x30, oidDer('1.3.101.112')),
          tlv(0x03, Buffer.concat([Buffer.from([0]), signature])),
        ]),
      );
    };
    expect(refusal(() => checkKubeletClientRequest(edRequest()))).toMatch(
      /unsupported signature algorithm 1\.3\.101\.112/,
    );
  });

  it('refuses bytes after the request and a request not in DER, as Go does', () => {
    expect(
      refusal(() => checkKubeletClientRequest(csr({ outer: (der) => Buffer.concat([der, Buffer.from([0, 0])]) }))),
    ).toMatch(/followed by 2 bytes that are not part of it/);
    // The outer SEQUENCE with an indefinite length (BER) and its end-of-contents octets.
    const indefinite = (der: Buffer): Buffer => {
      const headerLength = (der[1] ?? 0) & 0x80 ? 2 + ((der[1] ?? 0) & 0x7f) : 2;
      return Buffer.concat([Buffer.from([0x30, 0x80]), der.subarray(headerLength), Buffer.from([0, 0])]);
    };
    expect(refusal(() => checkKubeletClientRequest(csr({ outer: indefinite })))).toMatch(/not a DER PKCS#10 request/);
    // A long-form length where the short one fits is not DER either.
    expect(
      refusal(() =>
        checkKubeletClientRequest(
          csr({
            outer: (der) => {
              const body = der.subarray(4); // 0x30 0x82 hi lo
              return Buffer.concat([Buffer.from([0x30, 0x83, 0, body.length >> 8, body.length & 0xff]), body]);
            },
          }),
        ),
      ),
    ).toMatch(/not a DER PKCS#10 request/);
    expect(refusal(() => checkKubeletClientRequest(Buffer.from([0x30, 0x84, 0xff, 0xff, 0xff, 0xff])))).toMatch(
      /not a DER PKCS#10 request/,
    );
  });

  it('sees every SAN of every extensionRequest attribute and every SAN extension', () => {
    const hidden = csr({
      attributes: [
        extensionRequest([]),
        extensionRequest([sanExtension(dns('worker-1'))], [rawSanExtension(ipBytes([10, 9, 9, 9]))]),
        extensionRequest([sanExtension(dns('worker-1')), sanExtension(dns('kubernetes.default'))]),
      ],
    });
    expect(refusal(() => checkKubeletClientRequest(hidden, registered))).toMatch(
      /the request asks for dns:worker-1, dns:worker-1, dns:kubernetes\.default, ip:10\.9\.9\.9/,
    );
    expect(refusal(() => checkKubeletServingRequest(hidden, registered))).toMatch(
      /DNS names other than the node name "worker-1": kubernetes\.default/,
    );
  });

  it('refuses otherName, registeredID and directoryName SANs in both profiles', () => {
    const other = new GeneralName({
      otherName: new OtherName({ typeId: '1.3.6.1.4.1.311.20.2.3', value: AsnConvert.serialize(new OctetString(4)) }),
    });
    const registeredId = new GeneralName({ registeredID: '1.2.3.4' });
    const directory = new GeneralName({ directoryName: nodeSubject('worker-2') });
    for (const name of [other, registeredId, directory]) {
      const request = csr({ attributes: [extensionRequest([sanExtension(dns('worker-1'), name)])] });
      expect(refusal(() => checkKubeletClientRequest(request, registered))).toMatch(/subjectAltNames are not allowed/);
      expect(refusal(() => checkKubeletServingRequest(request, registered))).toMatch(
        /only DNS and IP subjectAltNames are allowed .* asks for (otherName|registeredID|directoryName)/,
      );
    }
  });

  it('refuses IP SANs that are not 4 or 16 bytes, as CsrError, with or without a registered instance', () => {
    for (const bytes of [[10, 0, 0, 1, 255, 255, 255, 255], [10, 0, 0, 1, 7], []]) {
      const request = csr({ attributes: [extensionRequest([rawSanExtension(dnsBytes('worker-1'), ipBytes(bytes))])] });
      expect(refusal(() => checkKubeletServingRequest(request))).toMatch(
        /IP subjectAltName .* is not a 4- or 16-byte address/,
      );
      expect(refusal(() => checkKubeletServingRequest(request, registered))).toMatch(
        /IP subjectAltName .* is not a 4- or 16-byte address/,
      );
    }
  });

  it('keeps a refusal for a huge SAN list short enough for a gRPC status and a log line', () => {
    const names = Array.from({ length: 1_500 }, (_, i) => dns(`n${i}`));
    const request = csr({ attributes: [extensionRequest([sanExtension(...names)])] });
    expect(request.length).toBeLessThan(16 * 1024);
    const serving = refusal(() => checkKubeletServingRequest(request, registered));
    expect(serving).toMatch(/DNS names other than the node name "worker-1": n0, n1, .* and 1490 more/);
    expect(serving.length).toBeLessThan(1_024);
    const client = refusal(() => checkKubeletClientRequest(request, registered));
    expect(client).toMatch(/and 1490 more/);
    expect(client.length).toBeLessThan(1_024);
  });

  it('reads the subject as Go does: two CNs or two Os are refused, a CN in a multi-valued RDN is one CN', async () => {
    expect(
      refusal(() =>
        checkKubeletClientRequest(
          csr({ subject: rdns([O('system:nodes')], [CN('system:node:worker-1'), CN('system:node:worker-2')]) }),
        ),
      ),
    ).toMatch(/common name/);
    expect(
      refusal(() =>
        checkKubeletClientRequest(
          csr({ subject: rdns([O('system:nodes'), O('system:masters')], [CN('system:node:worker-1')]) }),
        ),
      ),
    ).toMatch(/exactly one organisation "system:nodes", has \["system:nodes","system:masters"\]/);
    // CN as a non-string type is not a node name.
    const octets = attribute(
      '2.5.4.3',
      new AttributeValue({ anyValue: new Uint8Array(tlv(0x04, Buffer.from('system:node:worker-1'))).buffer }),
    );
    expect(refusal(() => checkKubeletClientRequest(csr({ subject: rdns([O('system:nodes')], [octets]) })))).toMatch(
      /common name does not begin with system:node:/,
    );
    // One RDN holding both: the certificate still carries the CA's own subject, and verifies.
    const multi = csr({ subject: rdns([O('system:nodes'), CN('system:node:worker-1')]) });
    const issued = await ca.issueKubeletClientCertificate(multi, registered);
    expect(issued.nodeName).toBe('worker-1');
    const dir = await tempDirForTest();
    await writeFile(join(dir, 'ca.crt'), caPem);
    await writeFile(join(dir, 'kubelet.crt'), issued.certificatePem);
    const result = await runCommand(
      'openssl',
      ['verify', '-purpose', 'sslclient', '-CAfile', join(dir, 'ca.crt'), join(dir, 'kubelet.crt')],
      { timeoutMs: 10_000 },
    );
    expect(`${result.stdout.toString()}${result.stderr}`).toMatch(/kubelet\.crt: OK/);
  });

  it('gives SANs hidden where the checks do not look (Microsoft msExtReq) no way into the certificate', async () => {
    const hidden = new Attribute({
      type: '1.3.6.1.4.1.311.2.1.14',
      values: [AsnConvert.serialize(new Extensions([sanExtension(dns('kubernetes.default'), dns('evil.example'))]))],
    });
    const request = csr({ attributes: [hidden, extensionRequest([rawSanExtension(dnsBytes('worker-1'))])] });
    const dir = await tempDirForTest();
    const issued = await ca.issueKubeletServingCertificate(request, registered);
    await writeFile(join(dir, 'ca.crt'), caPem);
    await writeFile(join(dir, 'kubelet.crt'), issued.certificatePem);
    const text = await runCommand(
      'openssl',
      ['x509', '-in', join(dir, 'kubelet.crt'), '-noout', '-ext', 'subjectAltName'],
      {
        timeoutMs: 10_000,
      },
    );
    expect(text.stdout.toString()).toMatch(/DNS:worker-1, IP Address:10\.0\.0\.1/);
    expect(text.stdout.toString()).not.toMatch(/evil|kubernetes\.default/);
    const verified = await runCommand(
      'openssl',
      ['verify', '-purpose', 'sslserver', '-CAfile', join(dir, 'ca.crt'), join(dir, 'kubelet.crt')],
      { timeoutMs: 10_000 },
    );
    expect(`${verified.stdout.toString()}${verified.stderr}`).toMatch(/kubelet\.crt: OK/);
  });

  it('refuses a compressed EC point, which Go (the API server) cannot read in the certificate', () => {
    const key = ec();
    const spki = key.publicKey.export({ type: 'spki', format: 'der' });
    const point = ECDH.convertKey(spki.subarray(-65), 'prime256v1', undefined, undefined, 'compressed') as Buffer;
    const algorithm = spki.subarray(2, spki.length - 68); // the AlgorithmIdentifier SEQUENCE
    const compressed = tlv(0x30, Buffer.concat([algorithm, tlv(0x03, Buffer.concat([Buffer.from([0]), point]))]));
    expect(refusal(() => checkKubeletClientRequest(csr({ key, spki: compressed }), registered))).toMatch(
      /EC public key must be an uncompressed point/,
    );
  });

  it('refuses a point that is not on the curve, in the canonical encoding the CA reads without OpenSSL', () => {
    // Canonical P-256 SPKIs are imported as JWKs (readCanonicalSpki): the import still checks the
    // point, so an invalid-curve key is refused before any signature is checked with it.
    const key = ec();
    const spki = Buffer.from(key.publicKey.export({ type: 'spki', format: 'der' }));
    spki[spki.length - 1] = (spki[spki.length - 1] ?? 0) ^ 1; // y changed: off the curve
    expect(refusal(() => checkKubeletClientRequest(csr({ key, spki }), registered))).toBe(
      'certificate request carries a public key this CA cannot read',
    );
  });

  it('refuses RSA keys Go cannot use: an exponent above 2^31-1, a modulus above 8192 bits', async () => {
    const hugeExponent = generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 0xffffffff });
    expect(refusal(() => checkKubeletClientRequest(csr({ key: hugeExponent }), registered))).toMatch(
      /RSA public exponent 4294967295 is not accepted: it must be odd, from 3 to 2\^31-1/,
    );
    // Stored: generating an 8200-bit key takes 20 to 70 s.
    const privateKey = createPrivateKey(await readFile(new URL('testdata/rsa-8200-test-key.pem', import.meta.url)));
    const tooLarge = { privateKey, publicKey: createPublicKey(privateKey) };
    expect(refusal(() => checkKubeletClientRequest(csr({ key: tooLarge }), registered))).toMatch(
      /key rsa \(8200 bits\) is not accepted: RSA keys may have at most 8192 bits/,
    );
  });

  it('refuses names a node owner might reach for: another case, too long, a path', () => {
    for (const name of ['Worker-1', 'a'.repeat(254), '../worker-1', 'worker-1 ', '']) {
      expect(refusal(() => checkKubeletClientRequest(csr({ subject: nodeSubject(name) })))).toMatch(
        /is not a valid Kubernetes node name|common name/,
      );
    }
    expect(refusal(() => checkKubeletClientRequest(csr({ subject: nodeSubject('worker-2') }), registered))).toMatch(
      /names node "worker-2", but this machine is registered as "worker-1"/,
    );
  });
});
