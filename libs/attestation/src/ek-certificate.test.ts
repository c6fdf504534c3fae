import { randomBytes, webcrypto } from 'node:crypto';
import type { webcrypto as WebCrypto } from 'node:crypto';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { requireProgram, runChecked, startSwtpm, tempDirForTest } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, Tpm, ekTemplate, publicKeyObject } from '@constellation/tpm';
import type { TpmPublic } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_EK_CERTIFICATE_BYTES, verifyEkCertificate } from './ek-certificate.js';
import { pemCertificatesToDer } from './pem.js';
import { x509 } from './x509.fixture.js';
import type { VerifyEkCertificateOptions } from './ek-certificate.js';
import { checkEkPublic, ekPublicKeyHash } from './ek-public.js';
import { AttestationError } from './errors.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const now = new Date();
const ECDSA = { name: 'ECDSA', hash: 'SHA-256' };

interface Ca {
  cert: x509.X509Certificate;
  keys: WebCrypto.CryptoKeyPair;
}

interface Validity {
  notBefore?: Date;
  notAfter?: Date;
}

function validity(v: Validity): { notBefore: Date; notAfter: Date } {
  return {
    notBefore: v.notBefore ?? new Date(now.getTime() - DAY),
    notAfter: v.notAfter ?? new Date(now.getTime() + 3650 * DAY),
  };
}

function serial(): string {
  return `01${randomBytes(8).toString('hex')}`;
}

function signingKeys(): Promise<WebCrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
}

function caExtensions(
  options: { ca?: boolean; pathLength?: number; keyUsage?: x509.KeyUsageFlags } = {},
): x509.Extension[] {
  return [
    new x509.BasicConstraintsExtension(options.ca ?? true, options.pathLength, true),
    options.keyUsage === undefined
      ? new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true)
      : new x509.KeyUsagesExtension(options.keyUsage, true),
  ];
}

async function makeRoot(name: string, v: Validity = {}, pathLength?: number): Promise<Ca> {
  const keys = await signingKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name,
    keys,
    signingAlgorithm: ECDSA,
    extensions: caExtensions(pathLength === undefined ? {} : { pathLength }),
    ...validity(v),
  });
  return { cert, keys };
}

async function makeIntermediate(
  issuer: Ca,
  name: string,
  v: Validity = {},
  extensions: x509.Extension[] = caExtensions(),
): Promise<Ca> {
  const keys = await signingKeys();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: name,
    issuer: issuer.cert.subjectName,
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: ECDSA,
    extensions,
    ...validity(v),
  });
  return { cert, keys };
}

/** TPM manufacturer/model/version in a directoryName, as TPM vendors put it in a critical SAN. */
const TPM_SAN = '2.23.133.2.1=id:00001014, 2.23.133.2.2=swtpm, 2.23.133.2.3=id:20191023';

/** `eku` null: no extendedKeyUsage at all, as on many EK certificates. */
function ekExtensions(eku: string[] | null = ['2.23.133.8.1']): x509.Extension[] {
  return [
    new x509.SubjectAlternativeNameExtension([{ type: 'dn', value: TPM_SAN }], true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyEncipherment, true),
    new x509.BasicConstraintsExtension(false, undefined, true),
    ...(eku === null ? [] : [new x509.ExtendedKeyUsageExtension(eku)]),
  ];
}

/** An EK certificate: empty subject, like many vendors' EK certificates. */
async function makeEkCert(
  issuer: Ca,
  spki: Buffer,
  v: Validity = {},
  extensions: x509.Extension[] = ekExtensions(),
): Promise<x509.X509Certificate> {
  return x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: '',
    issuer: issuer.cert.subjectName,
    publicKey: spki,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: ECDSA,
    extensions,
    ...validity(v),
  });
}

/** A copy: Buffer.from(ArrayBuffer) would share (and let a test tamper with) the certificate's bytes. */
function der(cert: x509.X509Certificate): Buffer {
  return Buffer.from(new Uint8Array(cert.rawData));
}

async function refusal(options: VerifyEkCertificateOptions): Promise<{ reason: string; message: string }> {
  try {
    await verifyEkCertificate(options);
  } catch (err) {
    if (err instanceof AttestationError) return { reason: err.reason, message: err.message };
    throw err;
  }
  throw new Error('verifyEkCertificate accepted the certificate');
}

async function readEk(swtpm: Swtpm, template: TpmPublic): Promise<TpmPublic> {
  const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
  try {
    const key = await tpm.createPrimary('endorsement', template);
    await tpm.flushContext(key.handle);
    return key.public;
  } finally {
    await tpm.close();
  }
}

function spkiOf(pub: TpmPublic): Buffer {
  return publicKeyObject(pub).export({ type: 'spki', format: 'der' });
}

let swtpm: Swtpm;
let ek: TpmPublic;
let ekSpki: Buffer;
let root: Ca;
let intermediate: Ca;
let leaf: x509.X509Certificate;

beforeAll(async () => {
  swtpm = await startSwtpm();
  // A real EK: the RSA 2048 key this TPM derives from its endorsement seed with the TCG template.
  ek = await readEk(swtpm, ekTemplate('rsa'));
  ekSpki = spkiOf(ek);
  root = await makeRoot('CN=Test TPM Root CA, O=Test Manufacturer');
  intermediate = await makeIntermediate(root, 'CN=Test TPM Intermediate CA, O=Test Manufacturer');
  leaf = await makeEkCert(intermediate, ekSpki);
});

afterAll(async () => {
  await swtpm.stop();
});

function good(overrides: Partial<VerifyEkCertificateOptions> = {}): VerifyEkCertificateOptions {
  return { certificate: der(leaf), intermediates: [der(intermediate.cert)], roots: [der(root.cert)], ...overrides };
}

describe('verifyEkCertificate accepts', () => {
  it('a quirky EK certificate for a real swtpm EK through an intermediate to the pinned root', async () => {
    const verified = await verifyEkCertificate(good());
    expect(verified).toMatchObject({
      subject: '',
      issuer: 'CN=Test TPM Intermediate CA, O=Test Manufacturer',
      serialNumber: leaf.serialNumber,
      path: ['', 'CN=Test TPM Intermediate CA, O=Test Manufacturer', 'CN=Test TPM Root CA, O=Test Manufacturer'],
      tpm: { manufacturer: 'id:00001014', model: 'swtpm', version: 'id:20191023' },
    });
    expect(verified.spki).toEqual(ekSpki);
    expect(verified.notAfter).toEqual(leaf.notAfter);
    // The EK the TPM regenerates is the TCG default EK and holds the certificate's key.
    checkEkPublic(await readEk(swtpm, ekTemplate('rsa')), verified);
    expect(ekPublicKeyHash(verified.spki)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('without an EKU, with unrelated intermediates and several roots, and the path given as a PEM bundle', async () => {
    const other = await makeRoot('CN=Other Root');
    const unrelated = await makeIntermediate(other, 'CN=Unrelated Intermediate');
    const noEku = await makeEkCert(intermediate, ekSpki, {}, ekExtensions(null));
    const bundle = [unrelated.cert, intermediate.cert].map((c) => c.toString('pem')).join('\n');
    const roots = pemCertificatesToDer([other.cert, root.cert].map((c) => c.toString('pem')).join('\n'));
    expect(roots[1]).toEqual(der(root.cert));
    const verified = await verifyEkCertificate({
      certificate: der(noEku),
      intermediates: pemCertificatesToDer(bundle),
      roots,
    });
    expect(verified.path).toHaveLength(3);
  });

  it('through a renewed intermediate when an expired one with the same name and key is also supplied', async () => {
    const name = 'CN=Renewed Intermediate';
    const current = await makeIntermediate(root, name);
    const expired = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: name,
      issuer: root.cert.subjectName,
      publicKey: current.keys.publicKey,
      signingKey: root.keys.privateKey,
      signingAlgorithm: ECDSA,
      extensions: caExtensions(),
      notBefore: new Date(now.getTime() - 20 * DAY),
      notAfter: new Date(now.getTime() - 10 * DAY),
    });
    const cert = await makeEkCert(current, ekSpki);
    const verified = await verifyEkCertificate(
      good({ certificate: der(cert), intermediates: [der(expired), der(current.cert)] }),
    );
    expect(verified.path[1]).toBe(name);
  });

  it('an EK certificate issued directly by the root, and one pinned itself', async () => {
    const direct = await makeEkCert(root, ekSpki);
    expect(
      (await verifyEkCertificate({ certificate: der(direct), intermediates: [], roots: [der(root.cert)] })).path,
    ).toEqual(['', 'CN=Test TPM Root CA, O=Test Manufacturer']);
    expect((await verifyEkCertificate({ certificate: der(leaf), intermediates: [], roots: [der(leaf)] })).path).toEqual(
      [''],
    );
  });
});

describe('verifyEkCertificate refuses', () => {
  it('a certificate from another CA', async () => {
    const otherRoot = await makeRoot('CN=Other TPM Root CA');
    const otherIntermediate = await makeIntermediate(otherRoot, 'CN=Other TPM Intermediate CA');
    const foreign = await makeEkCert(otherIntermediate, ekSpki);
    expect(await refusal(good({ certificate: der(foreign) }))).toEqual({
      reason: 'ek-certificate',
      message: expect.stringContaining(
        'EK certificate (empty subject, serial ' +
          foreign.serialNumber +
          ') does not chain to a pinned root (issuer "CN=Other TPM Intermediate CA"',
      ) as string,
    });
    const withPath = await refusal(good({ certificate: der(foreign), intermediates: [der(otherIntermediate.cert)] }));
    expect(withPath.message).toContain(
      'intermediate CA certificate "CN=Other TPM Intermediate CA" does not chain to a pinned root (issuer "CN=Other TPM Root CA"',
    );
  });

  it('a certificate from an impostor CA that copies the pinned root’s name', async () => {
    const impostor = await makeRoot(root.cert.subject);
    const forged = await makeEkCert(impostor, ekSpki);
    expect((await refusal(good({ certificate: der(forged), intermediates: [] }))).message).toBe(
      `signature of (empty subject, serial ${forged.serialNumber}) does not verify with pinned root certificate "CN=Test TPM Root CA, O=Test Manufacturer"`,
    );
  });

  it('a tampered signature', async () => {
    const tampered = der(leaf);
    tampered[tampered.length - 1] = (tampered[tampered.length - 1] ?? 0) ^ 0x01;
    const refused = await refusal(good({ certificate: tampered }));
    expect(refused.reason).toBe('ek-certificate');
    expect(refused.message).toMatch(
      /^signature of \(empty subject, serial \w+\) does not verify with intermediate CA certificate "CN=Test TPM Intermediate CA, O=Test Manufacturer"$/,
    );
  });

  it('an expired EK certificate, naming it and the date', async () => {
    const notAfter = new Date(now.getTime() - HOUR);
    const expired = await makeEkCert(intermediate, ekSpki, { notBefore: new Date(now.getTime() - 2 * DAY), notAfter });
    const refused = await refusal(good({ certificate: der(expired) }));
    expect(refused.reason).toBe('ek-certificate');
    expect(refused.message).toContain(`EK certificate (empty subject, serial ${expired.serialNumber}) expired on `);
    expect(refused.message).toContain(expired.notAfter.toISOString());
  });

  it('an expired intermediate, naming the intermediate', async () => {
    const old = await makeIntermediate(root, 'CN=Old Intermediate', {
      notBefore: new Date(now.getTime() - 20 * DAY),
      notAfter: new Date(now.getTime() - 10 * DAY),
    });
    const cert = await makeEkCert(old, ekSpki);
    const refused = await refusal({ ...good({ certificate: der(cert), intermediates: [der(old.cert)] }), now });
    expect(refused.message).toBe(
      `intermediate CA certificate "CN=Old Intermediate" expired on ${old.cert.notAfter.toISOString()} (now ${now.toISOString()})`,
    );
  });

  it('a certificate that is not yet valid, and any certificate at a `now` past the root’s end', async () => {
    const future = await makeEkCert(intermediate, ekSpki, { notBefore: new Date(now.getTime() + DAY) });
    expect((await refusal({ ...good({ certificate: der(future) }), now })).message).toContain(
      `is not valid before ${future.notBefore.toISOString()}`,
    );
    const late = new Date(root.cert.notAfter.getTime() + DAY);
    expect((await refusal({ ...good(), now: late })).message).toContain('EK certificate (empty subject');
  });

  it('an intermediate that is not a CA, or may not sign certificates, or exceeds a pathLenConstraint', async () => {
    const notCa = await makeIntermediate(root, 'CN=Not A CA', {}, caExtensions({ ca: false }));
    const fromNotCa = await makeEkCert(notCa, ekSpki);
    expect(await refusal(good({ certificate: der(fromNotCa), intermediates: [der(notCa.cert)] }))).toEqual({
      reason: 'ek-certificate',
      message: `intermediate CA certificate "CN=Not A CA" is not a CA (basicConstraints cA=false) but issued (empty subject, serial ${fromNotCa.serialNumber})`,
    });

    const noBc = await makeIntermediate(root, 'CN=No Basic Constraints', {}, []);
    const fromNoBc = await makeEkCert(noBc, ekSpki);
    expect((await refusal(good({ certificate: der(fromNoBc), intermediates: [der(noBc.cert)] }))).message).toContain(
      '"CN=No Basic Constraints" is not a CA (basicConstraints missing)',
    );

    const noCertSign = await makeIntermediate(
      root,
      'CN=CRL Signer',
      {},
      caExtensions({ keyUsage: x509.KeyUsageFlags.cRLSign }),
    );
    const fromNoCertSign = await makeEkCert(noCertSign, ekSpki);
    expect(
      (await refusal(good({ certificate: der(fromNoCertSign), intermediates: [der(noCertSign.cert)] }))).message,
    ).toContain('"CN=CRL Signer" keyUsage lacks keyCertSign');

    const strictRoot = await makeRoot('CN=Strict Root', {}, 0);
    const below = await makeIntermediate(strictRoot, 'CN=Below Strict Root');
    const fromBelow = await makeEkCert(below, ekSpki);
    expect(
      (await refusal({ certificate: der(fromBelow), intermediates: [der(below.cert)], roots: [der(strictRoot.cert)] }))
        .message,
    ).toBe(
      'pinned root certificate "CN=Strict Root" allows 0 intermediate CA(s) below it (pathLenConstraint), the path has 1',
    );
  });

  it('a path with more than four intermediates', async () => {
    let issuer = root;
    const chain: Ca[] = [];
    for (let i = 1; i <= 5; i++) {
      issuer = await makeIntermediate(issuer, `CN=Level ${i}`);
      chain.push(issuer);
    }
    const deep = await makeEkCert(issuer, ekSpki);
    const intermediates = chain.map((ca) => der(ca.cert));
    expect((await refusal(good({ certificate: der(deep), intermediates }))).message).toBe(
      'EK certificate path needs more than 4 intermediate certificates to reach a pinned root',
    );
    // Four are fine.
    const four = await makeEkCert(chain[3] as Ca, ekSpki);
    expect((await verifyEkCertificate(good({ certificate: der(four), intermediates }))).path).toHaveLength(6);
  });

  it('an EK certificate for another purpose, or with an unknown critical extension', async () => {
    const tls = await makeEkCert(intermediate, ekSpki, {}, ekExtensions(['1.3.6.1.5.5.7.3.1']));
    expect((await refusal(good({ certificate: der(tls) }))).message).toContain(
      'extendedKeyUsage [1.3.6.1.5.5.7.3.1] lacks the EK certificate purpose 2.23.133.8.1',
    );
    const unknown = new x509.Extension('1.2.3.4.5', true, new Uint8Array([0x05, 0x00]));
    const odd = await makeEkCert(intermediate, ekSpki, {}, [...ekExtensions(), unknown]);
    expect((await refusal(good({ certificate: der(odd) }))).message).toContain(
      'has an unrecognised critical extension 1.2.3.4.5',
    );
  });

  it('no roots, too many intermediates, garbage, oversized input', async () => {
    expect(await refusal(good({ roots: [] }))).toEqual({
      reason: 'ek-certificate',
      message: 'no pinned roots are configured for EK certificates',
    });
    const many = Array.from({ length: 17 }, () => der(intermediate.cert));
    expect((await refusal(good({ intermediates: many }))).message).toBe(
      '17 intermediate certificates supplied, at most 16 allowed',
    );
    expect(
      (await refusal(good({ certificate: Buffer.from('this is not a certificate, '.repeat(8)) }))).message,
    ).toMatch(/^EK certificate is not a well-formed DER X\.509 certificate \(/);
    expect((await refusal(good({ intermediates: [Buffer.from('not a certificate')] }))).message).toMatch(
      /^intermediate certificate 1 is not a well-formed DER X\.509 certificate/,
    );
    expect((await refusal(good({ roots: [Buffer.alloc(0)] }))).message).toBe('pinned root certificate 1 is empty');
    const big = Buffer.concat([der(leaf), Buffer.alloc(MAX_EK_CERTIFICATE_BYTES)]);
    expect((await refusal(good({ certificate: big }))).message).toContain('more than the 8192 allowed');
    // A certificate with trailing bytes (an NV index read whole) is refused.
    expect((await refusal(good({ certificate: Buffer.concat([der(leaf), Buffer.alloc(3, 0xff)]) }))).message).toBe(
      'EK certificate is followed by 3 bytes that are not part of the certificate',
    );
  });

  it('PEM bundles with other block types or nothing in them', () => {
    const key = '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n';
    expect(() => pemCertificatesToDer(key)).toThrow('PEM block 1 is "PRIVATE KEY", expected "CERTIFICATE"');
    expect(() => pemCertificatesToDer('hello')).toThrow(AttestationError);
  });
});

describe('swtpm_localca EK certificates (a real manufacturer-style chain)', () => {
  it('validate to the swtpm-localca root, and the TPM’s regenerated EK matches the RSA certificate', async () => {
    const dir = await tempDirForTest();
    const localca = await requireProgram('swtpm_localca', 'swtpm-tools');
    await requireProgram('swtpm_setup', 'swtpm-tools');
    const state = join(dir, 'state');
    const caDir = join(dir, 'ca');
    const out = join(dir, 'out');
    await writeFile(
      join(dir, 'localca.conf'),
      [
        `statedir = ${caDir}`,
        `signingkey = ${caDir}/signkey.pem`,
        `issuercert = ${caDir}/issuercert.pem`,
        `certserial = ${caDir}/certserial`,
        '',
      ].join('\n'),
    );
    await writeFile(join(dir, 'localca.options'), '');
    await writeFile(
      join(dir, 'setup.conf'),
      [
        `create_certs_tool = ${localca}`,
        `create_certs_tool_config = ${join(dir, 'localca.conf')}`,
        `create_certs_tool_options = ${join(dir, 'localca.options')}`,
        '',
      ].join('\n'),
    );
    for (const sub of [state, caDir, out]) await runChecked('mkdir', ['-p', sub], { timeoutMs: 5_000 });
    await runChecked(
      'swtpm_setup',
      [
        '--tpm2',
        '--tpmstate',
        state,
        '--create-ek-cert',
        '--config',
        join(dir, 'setup.conf'),
        '--write-ek-cert-files',
        out,
        '--overwrite',
      ],
      { timeoutMs: 60_000 },
    );
    const files = await readdir(caDir);
    const rootFile = files.find((f) => f.startsWith('swtpm-localca-rootca') && f.endsWith('-cert.pem'));
    expect(rootFile).toBeDefined();
    const roots = pemCertificatesToDer(await readFile(join(caDir, rootFile ?? ''), 'utf8'));
    const intermediates = pemCertificatesToDer(await readFile(join(caDir, 'issuercert.pem'), 'utf8'));

    // --write-ek-cert-files writes DER.
    const rsaCert = await readFile(join(out, 'ek-rsa2048.crt'));
    expect(rsaCert[0]).toBe(0x30);
    const verified = await verifyEkCertificate({ certificate: rsaCert, intermediates, roots });
    expect(verified.path).toEqual(['CN=unknown', 'CN=swtpm-localca', 'CN=swtpm-localca-rootca']);
    expect(verified.tpm).toEqual({ manufacturer: 'id:00001014', model: 'swtpm', version: 'id:20191023' });

    const eccCert = await readFile(join(out, 'ek-secp384r1.crt'));
    expect((await verifyEkCertificate({ certificate: eccCert, intermediates, roots })).path).toHaveLength(3);

    // OpenSSL agrees on the path.
    await writeFile(join(dir, 'ek.der'), rsaCert);
    await runChecked('openssl', ['x509', '-inform', 'DER', '-in', join(dir, 'ek.der'), '-out', join(dir, 'ek.pem')], {
      timeoutMs: 10_000,
    });
    await runChecked(
      'openssl',
      [
        'verify',
        '-CAfile',
        join(caDir, rootFile ?? ''),
        '-untrusted',
        join(caDir, 'issuercert.pem'),
        join(dir, 'ek.pem'),
      ],
      { timeoutMs: 10_000 },
    );

    // The TPM that swtpm_setup manufactured regenerates exactly the certified EK.
    const manufactured = await startSwtpm({ stateDir: state });
    try {
      const regenerated = await readEk(manufactured, ekTemplate('rsa'));
      checkEkPublic(regenerated, verified);
      expect(ekPublicKeyHash(verified.spki)).toBe(ekPublicKeyHash(spkiOf(regenerated)));
      // It is not the EK of the other swtpm.
      expect(() => {
        checkEkPublic(ek, verified);
      }).toThrow(/RSA modulus .* differs from the EK certificate's/);
    } finally {
      await manufactured.stop();
    }
  });
});
