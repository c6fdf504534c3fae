import 'reflect-metadata';
import { X509Certificate, createPrivateKey, generateKeyPairSync, webcrypto } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runChecked, runCommand, tempDirForTest } from '@constellation/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { caPublicKeyPin, isCaPin } from './ca-pin.js';
import { CertificateAuthority } from './certificate-authority.js';
import { CsrError } from './kubelet-csr-checks.js';
import { createKubeletCsr } from './kubelet-csr.js';
import * as x509 from '@peculiar/x509';

// @peculiar/x509 reads and builds requests here as an independent second opinion on the CA's output.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

let ca: CertificateAuthority;
let caPem: string;

beforeAll(async () => {
  const generated = await CertificateAuthority.generate('kubernetes');
  ca = generated.ca;
  caPem = generated.certificatePem;
});

type SubjectPart = Record<string, string[]>;
type San = { type: 'ip' | 'dns' | 'email' | 'url'; value: string };

/** A request exactly as an attacker may shape it: any subject, SANs, extensions and key. */
async function csrWith(
  name: SubjectPart[],
  sans: San[] = [],
  options: { extensions?: x509.Extension[]; rsaBits?: number } = {},
): Promise<Buffer> {
  const rsa = options.rsaBits !== undefined;
  const algorithm = rsa
    ? {
        name: 'RSASSA-PKCS1-v1_5',
        hash: 'SHA-256',
        modulusLength: options.rsaBits ?? 2048,
        publicExponent: new Uint8Array([1, 0, 1]),
      }
    : { name: 'ECDSA', namedCurve: 'P-256' };
  const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name,
    keys,
    signingAlgorithm: rsa ? algorithm : { name: 'ECDSA', hash: 'SHA-256' },
    extensions: [
      ...(sans.length > 0 ? [new x509.SubjectAlternativeNameExtension(sans)] : []),
      ...(options.extensions ?? []),
    ],
  });
  return Buffer.from(csr.rawData);
}

const node = (name: string): SubjectPart[] => [{ O: ['system:nodes'] }, { CN: [`system:node:${name}`] }];

/** The profile of an issued certificate, read back from its DER. */
function profileOf(pem: string): {
  subject: string;
  extendedKeyUsages: string[];
  keyUsages: string[];
  subjectAltNames: string[];
  isCa: boolean | undefined;
} {
  const cert = new x509.X509Certificate(pem);
  const usages = cert.getExtension(x509.KeyUsagesExtension)?.usages ?? 0;
  const flags = Object.entries(x509.KeyUsageFlags).filter(
    (entry): entry is [string, number] => typeof entry[1] === 'number' && (usages & entry[1]) !== 0,
  );
  return {
    subject: cert.subject,
    extendedKeyUsages: (cert.getExtension(x509.ExtendedKeyUsageExtension)?.usages ?? []).map(String),
    keyUsages: flags.map(([flag]) => flag),
    subjectAltNames: (cert.getExtension(x509.SubjectAlternativeNameExtension)?.names.items ?? []).map(
      (n) => `${n.type}:${n.value}`,
    ),
    isCa: cert.getExtension(x509.BasicConstraintsExtension)?.ca,
  };
}

/** `openssl verify -purpose <purpose>`: chains to the CA, and the usages fit the purpose. */
async function opensslVerify(certificatePem: string, purpose: 'sslclient' | 'sslserver'): Promise<string> {
  const dir = await tempDirForTest();
  await writeFile(join(dir, 'ca.crt'), caPem);
  await writeFile(join(dir, 'kubelet.crt'), certificatePem);
  const result = await runCommand(
    'openssl',
    ['verify', '-purpose', purpose, '-CAfile', join(dir, 'ca.crt'), join(dir, 'kubelet.crt')],
    { timeoutMs: 10_000 },
  );
  return `${result.stdout.toString()}${result.stderr}`.replaceAll(dir, '<dir>').trim();
}

describe('cluster CA', () => {
  it("pins the CA's public key exactly as openssl computes it", async () => {
    const dir = await tempDirForTest();
    await writeFile(join(dir, 'ca.crt'), caPem);
    const spki = await runChecked(
      'bash',
      ['-c', `openssl x509 -in ${join(dir, 'ca.crt')} -pubkey -noout | openssl pkey -pubin -outform der | sha256sum`],
      { timeoutMs: 10_000 },
    );
    const pin = caPublicKeyPin(caPem);
    expect(isCaPin(pin)).toBe(true);
    expect(pin).toBe(`sha256:${spki.stdout.toString().split(' ')[0] ?? ''}`);
  });

  it('gives kubeadm-style certificates key encipherment only for RSA keys', async () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey;
    const issue = (publicKey: KeyObject): Promise<string> =>
      ca.issueCertificate({ commonName: 'kube-apiserver', publicKey, usage: 'server' });
    expect(profileOf(await issue(ec)).keyUsages).toEqual(['digitalSignature']);
    expect(profileOf(await issue(rsa)).keyUsages).toEqual(['digitalSignature', 'keyEncipherment']);
  });
});

// Signer kubernetes.io/kube-apiserver-client-kubelet: ValidateKubeletClientCSR in
// pkg/apis/certificates/helpers.go (O=system:nodes, CN prefix system:node:, no DNS/email/IP/URI
// SANs, usages digital signature + client auth, key encipherment only with RSA).
describe('kubelet client certificate', () => {
  it('has the client profile: subject O=system:nodes CN=system:node:<name>, client auth only, no SANs', async () => {
    const { csrDer, keyPem } = await createKubeletCsr('worker-1', []);
    expect(keyPem).toContain('-----BEGIN EC PRIVATE KEY-----');
    const issued = await ca.issueKubeletClientCertificate(csrDer);
    expect(issued).toMatchObject({ nodeName: 'worker-1', ips: [], dnsNames: [] });
    expect(profileOf(issued.certificatePem)).toEqual({
      subject: 'O=system:nodes, CN=system:node:worker-1',
      extendedKeyUsages: [x509.ExtendedKeyUsage.clientAuth],
      keyUsages: ['digitalSignature'],
      subjectAltNames: [],
      isCa: false,
    });
    const cert = new X509Certificate(issued.certificatePem);
    expect(cert.checkPrivateKey(createPrivateKey(keyPem))).toBe(true);
    expect(new Date(cert.validFrom).getTime()).toBeLessThan(Date.now() - 3600_000);
    expect(await opensslVerify(issued.certificatePem, 'sslclient')).toBe('<dir>/kubelet.crt: OK');
    expect(await opensslVerify(issued.certificatePem, 'sslserver')).toMatch(/unsuitable certificate purpose/);
  });

  it('adds key encipherment for an RSA key (kubeletClientRequiredUsages)', async () => {
    const issued = await ca.issueKubeletClientCertificate(await csrWith(node('worker-1'), [], { rsaBits: 2048 }));
    expect(profileOf(issued.certificatePem).keyUsages).toEqual(['digitalSignature', 'keyEncipherment']);
  });

  it.each([
    [[{ type: 'ip', value: '10.42.0.11' }], 'ip:10.42.0.11'],
    [[{ type: 'dns', value: 'worker-1' }], 'dns:worker-1'],
    [[{ type: 'email', value: 'root@worker-1' }], 'email:root@worker-1'],
    [[{ type: 'url', value: 'spiffe://cluster/worker-1' }], 'url:spiffe://cluster/worker-1'],
  ] as [San[], string][])('refuses subjectAltNames, as ValidateKubeletClientCSR does (%j)', async (sans, named) => {
    await expect(ca.issueKubeletClientCertificate(await csrWith(node('worker-1'), sans))).rejects.toThrow(
      `subjectAltNames are not allowed in a kubelet client certificate (ValidateKubeletClientCSR); the request asks for ${named}`,
    );
  });

  it('refuses another node name for a registered instance', async () => {
    await expect(
      ca.issueKubeletClientCertificate(await csrWith(node('control-plane-0')), {
        name: 'worker-1',
        ips: ['10.42.0.11'],
      }),
    ).rejects.toThrow('certificate request names node "control-plane-0", but this machine is registered as "worker-1"');
  });

  it('ignores the usages, CA flag and subject parts a request asks for: the profile decides', async () => {
    const greedy = await csrWith([{ O: ['system:nodes'] }, { OU: ['extra'] }, { CN: ['system:node:worker-1'] }], [], {
      extensions: [
        new x509.ExtendedKeyUsageExtension([
          x509.ExtendedKeyUsage.serverAuth,
          x509.ExtendedKeyUsage.clientAuth,
          x509.ExtendedKeyUsage.codeSigning,
        ]),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.digitalSignature, true),
        new x509.BasicConstraintsExtension(true, 3, true),
      ],
    });
    const issued = await ca.issueKubeletClientCertificate(greedy, { name: 'worker-1', ips: ['10.42.0.11'] });
    expect(profileOf(issued.certificatePem)).toEqual({
      subject: 'O=system:nodes, CN=system:node:worker-1',
      extendedKeyUsages: [x509.ExtendedKeyUsage.clientAuth],
      keyUsages: ['digitalSignature'],
      subjectAltNames: [],
      isCa: false,
    });
  });
});

// Signer kubernetes.io/kubelet-serving: ValidateKubeletServingCSR in
// pkg/apis/certificates/helpers.go (O=system:nodes, CN prefix system:node:, at least one DNS or IP
// SAN, no email/URI SANs, usages digital signature + server auth, key encipherment only with RSA).
describe('kubelet serving certificate', () => {
  const registered = { name: 'worker-1', ips: ['10.42.0.11'] };

  it("has the serving profile: server auth only, the node's name as DNS SAN and its registered IPs", async () => {
    const { csrDer, keyPem } = await createKubeletCsr('worker-1', ['10.42.0.11'], ['worker-1']);
    const issued = await ca.issueKubeletServingCertificate(csrDer, registered);
    expect(issued).toMatchObject({ nodeName: 'worker-1', ips: ['10.42.0.11'], dnsNames: ['worker-1'] });
    expect(profileOf(issued.certificatePem)).toEqual({
      subject: 'O=system:nodes, CN=system:node:worker-1',
      extendedKeyUsages: [x509.ExtendedKeyUsage.serverAuth],
      keyUsages: ['digitalSignature'],
      subjectAltNames: ['dns:worker-1', 'ip:10.42.0.11'],
      isCa: false,
    });
    expect(new X509Certificate(issued.certificatePem).checkPrivateKey(createPrivateKey(keyPem))).toBe(true);
    expect(await opensslVerify(issued.certificatePem, 'sslserver')).toBe('<dir>/kubelet.crt: OK');
    expect(await opensslVerify(issued.certificatePem, 'sslclient')).toMatch(/unsuitable certificate purpose/);
  });

  it('carries the registered IPs even when the request names none, and the node name as DNS name', async () => {
    const issued = await ca.issueKubeletServingCertificate((await createKubeletCsr('worker-1', [])).csrDer, {
      name: 'worker-1',
      ips: ['10.42.0.11', 'fd00::11'],
    });
    expect(profileOf(issued.certificatePem).subjectAltNames).toEqual(['dns:worker-1', 'ip:10.42.0.11', 'ip:fd00::11']);
  });

  it('without a registry (bare metal) takes the IPs the request asks for', async () => {
    const issued = await ca.issueKubeletServingCertificate(
      (await createKubeletCsr('metal-7', ['10.42.0.77', 'fd00::3'])).csrDer,
    );
    expect(new X509Certificate(issued.certificatePem).subjectAltName).toBe(
      'DNS:metal-7, IP Address:10.42.0.77, IP Address:FD00:0:0:0:0:0:0:3',
    );
  });

  it('adds key encipherment for an RSA key (kubeletServingRequiredUsages)', async () => {
    const issued = await ca.issueKubeletServingCertificate(
      await csrWith(node('worker-1'), [{ type: 'ip', value: '10.42.0.11' }], { rsaBits: 2048 }),
      registered,
    );
    expect(profileOf(issued.certificatePem).keyUsages).toEqual(['digitalSignature', 'keyEncipherment']);
  });

  it.each([
    [
      node('control-plane-0'),
      [],
      'certificate request names node "control-plane-0", but this machine is registered as "worker-1"',
    ],
    [
      node('worker-1'),
      [
        { type: 'ip', value: '10.42.0.11' },
        { type: 'ip', value: '10.96.0.1' },
      ],
      'certificate request asks for IP addresses that are not registered for "worker-1": 10.96.0.1',
    ],
    [
      node('worker-1'),
      [{ type: 'ip', value: '10.42.0.12' }],
      'certificate request asks for IP addresses that are not registered for "worker-1": 10.42.0.12',
    ],
    [
      node('worker-1'),
      [
        { type: 'dns', value: 'worker-1' },
        { type: 'dns', value: 'kubernetes.default.svc' },
      ],
      'certificate request asks for DNS names other than the node name "worker-1": kubernetes.default.svc',
    ],
    [
      node('worker-1'),
      [{ type: 'email', value: 'root@worker-1' }],
      'only DNS and IP subjectAltNames are allowed in a kubelet serving certificate (ValidateKubeletServingCSR); the request asks for email:root@worker-1',
    ],
    [
      node('worker-1'),
      [{ type: 'url', value: 'spiffe://cluster/worker-1' }],
      'only DNS and IP subjectAltNames are allowed in a kubelet serving certificate (ValidateKubeletServingCSR); the request asks for url:spiffe://cluster/worker-1',
    ],
  ] as [SubjectPart[], San[], string][])(
    "refuses an attested node asking for another node's name, addresses or other names: %j %j",
    async (subject, sans, reason) => {
      await expect(ca.issueKubeletServingCertificate(await csrWith(subject, sans), registered)).rejects.toThrow(reason);
    },
  );

  it('ignores requested usages and the CA flag: the profile decides', async () => {
    const greedy = await csrWith(node('worker-1'), [{ type: 'ip', value: '10.42.0.11' }], {
      extensions: [
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth, x509.ExtendedKeyUsage.serverAuth]),
        new x509.BasicConstraintsExtension(true, undefined, true),
      ],
    });
    const profile = profileOf((await ca.issueKubeletServingCertificate(greedy, registered)).certificatePem);
    expect(profile.extendedKeyUsages).toEqual([x509.ExtendedKeyUsage.serverAuth]);
    expect(profile.isCa).toBe(false);
  });
});

describe('kubelet certificate requests', () => {
  it('are requests OpenSSL reads and verifies: subject, SANs and signature (createKubeletCsr writes DER itself)', async () => {
    const dir = await tempDirForTest();
    const { csrDer } = await createKubeletCsr('worker-1', ['10.42.0.11', 'fd00::11'], ['worker-1']);
    await writeFile(join(dir, 'kubelet.csr'), csrDer);
    const shown = await runChecked(
      'openssl',
      ['req', '-inform', 'der', '-in', join(dir, 'kubelet.csr'), '-verify', '-noout', '-text'],
      { timeoutMs: 10_000 },
    );
    const text = `${shown.stdout.toString()}${shown.stderr}`;
    expect(text).toMatch(/verify OK/);
    expect(text).toMatch(/Subject: O\s?=\s?system:nodes, CN\s?=\s?system:node:worker-1/);
    expect(text).toMatch(/DNS:worker-1, IP Address:10\.42\.0\.11, IP Address:FD00:0:0:0:0:0:0:11/);
  });

  it.each([
    [[{ O: ['system:masters'] }, { CN: ['system:node:w'] }], /subject organization is not system:nodes/],
    [[{ O: ['system:nodes', 'system:masters'] }, { CN: ['system:node:w'] }], /exactly one organisation/],
    [[{ O: ['system:nodes'] }, { CN: ['admin'] }], /subject common name does not begin with system:node:/],
    [[{ O: ['system:nodes'] }, { CN: ['system:node:Bad_Name'] }], /not a valid Kubernetes node name/],
  ] as [SubjectPart[], RegExp][])('refuses a request with subject %j for both profiles', async (name, message) => {
    const csr = await csrWith(name, [{ type: 'ip', value: '10.0.0.1' }]);
    await expect(ca.issueKubeletServingCertificate(csr)).rejects.toThrow(message);
    await expect(ca.issueKubeletClientCertificate(await csrWith(name))).rejects.toThrow(message);
  });

  it('refuses forged, truncated, oversized and garbage requests', async () => {
    const { csrDer } = await createKubeletCsr('worker-1', []);
    const forged = Buffer.from(csrDer);
    forged[forged.length - 5]! ^= 0x01; // inside the signature
    await expect(ca.issueKubeletClientCertificate(forged)).rejects.toThrow(
      'certificate request signature does not verify',
    );
    await expect(ca.issueKubeletClientCertificate(csrDer.subarray(0, 40))).rejects.toBeInstanceOf(CsrError);
    await expect(ca.issueKubeletServingCertificate(Buffer.alloc(20_000))).rejects.toThrow(/must be 1 to 16384 bytes/);
    await expect(ca.issueKubeletServingCertificate(Buffer.from('not a csr'))).rejects.toThrow(
      'not a DER PKCS#10 request',
    );
  });

  it('refuses weak keys', async () => {
    await expect(ca.issueKubeletClientCertificate(await csrWith(node('w'), [], { rsaBits: 1024 }))).rejects.toThrow(
      'certificate request key rsa (1024 bits) is not accepted: use ECDSA P-256/P-384 or RSA with at least 2048 bits',
    );
  });

  it('signs with an RSA CA key in PKCS#1 form too', async () => {
    const dir = await tempDirForTest();
    await runChecked('openssl', ['genrsa', '-traditional', '-out', join(dir, 'ca.key'), '2048'], { timeoutMs: 30_000 });
    await runChecked(
      'openssl',
      ['req', '-x509', '-key', join(dir, 'ca.key'), '-out', join(dir, 'ca.crt'), '-days', '1', '-subj', '/CN=rsa-ca'],
      { timeoutMs: 30_000 },
    );
    expect(await readFile(join(dir, 'ca.key'), 'utf8')).toContain('BEGIN RSA PRIVATE KEY');
    const rsa = await CertificateAuthority.fromPem(
      await readFile(join(dir, 'ca.crt'), 'utf8'),
      await readFile(join(dir, 'ca.key'), 'utf8'),
    );
    const issued = await rsa.issueKubeletServingCertificate((await createKubeletCsr('w3', ['10.0.0.3'])).csrDer);
    await writeFile(join(dir, 'k.crt'), issued.certificatePem);
    const verify = await runCommand('openssl', ['verify', '-CAfile', join(dir, 'ca.crt'), join(dir, 'k.crt')], {
      timeoutMs: 10_000,
    });
    expect(verify.code).toBe(0);
  });
});
