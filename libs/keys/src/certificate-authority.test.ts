import { X509Certificate, webcrypto } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runChecked, runCommand, tempDirForTest } from '@constellation/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { caPublicKeyPin, isCaPin } from './ca-pin.js';
import { CertificateAuthority, CsrError } from './certificate-authority.js';
import { createKubeletCsr } from './kubelet-csr.js';
import { x509 } from './x509-provider.js';

let ca: CertificateAuthority;
let caPem: string;

beforeAll(async () => {
  const generated = await CertificateAuthority.generate('kubernetes');
  ca = generated.ca;
  caPem = generated.certificatePem;
});

async function csrWith(
  name: { O: string[] }[] | { CN: string[] }[],
  ips: string[] = [],
  dns: string[] = [],
): Promise<Buffer> {
  const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const names = [
    ...ips.map((value) => ({ type: 'ip' as const, value })),
    ...dns.map((value) => ({ type: 'dns' as const, value })),
  ];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name,
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    extensions: names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : [],
  });
  return Buffer.from(csr.rawData);
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

  it('issues a kubelet certificate that chains to the CA, with the node name and IPs, for client and server auth', async () => {
    const dir = await tempDirForTest();
    const { csrDer, keyPem } = await createKubeletCsr('worker-1', ['10.42.0.3', 'fd00::3']);
    expect(keyPem).toContain('-----BEGIN EC PRIVATE KEY-----');
    const issued = await ca.issueKubeletCertificate(csrDer);
    expect(issued).toMatchObject({ nodeName: 'worker-1', ips: ['10.42.0.3', 'fd00::3'] });
    await writeFile(join(dir, 'ca.crt'), caPem);
    await writeFile(join(dir, 'kubelet.crt'), issued.certificatePem);
    const verify = await runCommand('openssl', ['verify', '-CAfile', join(dir, 'ca.crt'), join(dir, 'kubelet.crt')], {
      timeoutMs: 10_000,
    });
    expect(verify.stdout.toString().trim()).toBe(`${join(dir, 'kubelet.crt')}: OK`);
    const cert = new X509Certificate(issued.certificatePem);
    expect(cert.subject).toBe('O=system:nodes\nCN=system:node:worker-1');
    expect(cert.subjectAltName).toBe('IP Address:10.42.0.3, IP Address:FD00:0:0:0:0:0:0:3');
    expect(cert.ca).toBe(false);
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2', '1.3.6.1.5.5.7.3.1']);
    expect(new Date(cert.validFrom).getTime()).toBeLessThan(Date.now() - 3600_000);
  });

  describe('for a registered instance (the attested node asks for more than it is)', () => {
    const registered = { name: 'worker-1', ips: ['10.42.0.11'] };

    it('refuses another node name', async () => {
      const csr = await csrWith([{ O: ['system:nodes'] }, { CN: ['system:node:control-plane-0'] }] as never);
      await expect(ca.issueKubeletCertificate(csr, registered)).rejects.toThrow(
        'certificate request names node "control-plane-0", but this machine is registered as "worker-1"',
      );
    });

    it('refuses IP addresses that are not registered, such as the API service IP', async () => {
      const csr = await csrWith([{ O: ['system:nodes'] }, { CN: ['system:node:worker-1'] }] as never, [
        '10.42.0.11',
        '10.96.0.1',
      ]);
      await expect(ca.issueKubeletCertificate(csr, registered)).rejects.toThrow(
        'asks for IP addresses that are not registered for "worker-1": 10.96.0.1',
      );
    });

    it('issues exactly the registered name and IPs, and builds the subject itself (no extra OU)', async () => {
      const csr = await csrWith([
        { O: ['system:nodes'] },
        { OU: ['extra'] },
        { CN: ['system:node:worker-1'] },
      ] as never);
      const cert = new X509Certificate((await ca.issueKubeletCertificate(csr, registered)).certificatePem);
      expect(cert.subject).toBe('O=system:nodes\nCN=system:node:worker-1');
      expect(cert.subjectAltName).toBe('IP Address:10.42.0.11');
    });
  });

  it('drops DNS SANs from the request', async () => {
    const issued = await ca.issueKubeletCertificate(
      await csrWith([{ O: ['system:nodes'] }, { CN: ['system:node:w2'] }] as never, ['10.0.0.2'], ['evil.example.com']),
    );
    expect(new X509Certificate(issued.certificatePem).subjectAltName).toBe('IP Address:10.0.0.2');
  });

  it.each([
    [[{ O: ['system:masters'] }, { CN: ['system:node:w'] }], /exactly one organisation "system:nodes"/],
    [[{ O: ['system:nodes', 'system:masters'] }, { CN: ['system:node:w'] }], /exactly one organisation/],
    [[{ O: ['system:nodes'] }, { CN: ['admin'] }], /CN must be "system:node:<node name>"/],
    [[{ O: ['system:nodes'] }, { CN: ['system:node:Bad_Name'] }], /not a valid Kubernetes node name/],
  ])('refuses a request with subject %j', async (name, message) => {
    await expect(ca.issueKubeletCertificate(await csrWith(name as never))).rejects.toThrow(message);
  });

  it('refuses forged, truncated, oversized and garbage requests', async () => {
    const { csrDer } = await createKubeletCsr('worker-1', []);
    const forged = Buffer.from(csrDer);
    forged[forged.length - 5]! ^= 0x01; // inside the signature
    await expect(ca.issueKubeletCertificate(forged)).rejects.toThrow('certificate request signature does not verify');
    await expect(ca.issueKubeletCertificate(csrDer.subarray(0, 40))).rejects.toBeInstanceOf(CsrError);
    await expect(ca.issueKubeletCertificate(Buffer.alloc(20_000))).rejects.toThrow(/must be 1 to 16384 bytes/);
    await expect(ca.issueKubeletCertificate(Buffer.from('not a csr'))).rejects.toThrow('not a DER PKCS#10 request');
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
    const issued = await rsa.issueKubeletCertificate((await createKubeletCsr('w3', ['10.0.0.3'])).csrDer);
    await writeFile(join(dir, 'k.crt'), issued.certificatePem);
    const verify = await runCommand('openssl', ['verify', '-CAfile', join(dir, 'ca.crt'), join(dir, 'k.crt')], {
      timeoutMs: 10_000,
    });
    expect(verify.code).toBe(0);
  });
});
