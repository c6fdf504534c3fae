import { createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import type { KeyObject, webcrypto as WebCrypto } from 'node:crypto';
import { x509 } from './x509-provider.js';

/** A certificate request that the CA refuses; the message says which check failed. */
export class CsrError extends Error {
  override readonly name = 'CsrError';
}

export interface IssuedKubeletCertificate {
  certificatePem: string;
  /** Node name from the CSR's CN, without the "system:node:" prefix. */
  nodeName: string;
  /** IP SANs copied from the CSR. */
  ips: string[];
}

const SUBJECT_ALT_NAME = '2.5.29.17';
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const MAX_CSR_BYTES = 16 * 1024;
const HOUR = 3600_000;

/** The algorithm WebCrypto needs for a key, from Node's view of it. */
function webAlgorithm(key: KeyObject): WebCrypto.EcKeyImportParams | WebCrypto.RsaHashedImportParams {
  if (key.asymmetricKeyType === 'ec') return { name: 'ECDSA', namedCurve: 'P-256' };
  if (key.asymmetricKeyType === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  throw new RangeError(`unsupported CA key type ${key.asymmetricKeyType ?? 'unknown'}`);
}

function signingAlgorithm(key: KeyObject): WebCrypto.EcdsaParams | WebCrypto.Algorithm {
  return key.asymmetricKeyType === 'ec' ? { name: 'ECDSA', hash: 'SHA-256' } : { name: 'RSASSA-PKCS1-v1_5' };
}

/**
 * The cluster CA (`/etc/kubernetes/pki/ca.{crt,key}`). Signs kubelet certificates from node CSRs
 * after checking them; the key may be EC (SEC1 or PKCS#8) or RSA.
 */
export class CertificateAuthority {
  readonly certificatePem: string;
  private readonly certificate: x509.X509Certificate;
  private readonly key: WebCrypto.CryptoKey;
  private readonly algorithm: WebCrypto.EcdsaParams | WebCrypto.Algorithm;

  private constructor(
    certificatePem: string,
    certificate: x509.X509Certificate,
    key: WebCrypto.CryptoKey,
    algorithm: WebCrypto.EcdsaParams | WebCrypto.Algorithm,
  ) {
    this.certificatePem = certificatePem;
    this.certificate = certificate;
    this.key = key;
    this.algorithm = algorithm;
  }

  static async fromPem(certificatePem: string, keyPem: string): Promise<CertificateAuthority> {
    const nodeKey = createPrivateKey(keyPem);
    const key = await webcrypto.subtle.importKey(
      'pkcs8',
      nodeKey.export({ type: 'pkcs8', format: 'der' }),
      webAlgorithm(nodeKey),
      false,
      ['sign'],
    );
    return new CertificateAuthority(
      certificatePem,
      new x509.X509Certificate(certificatePem),
      key,
      signingAlgorithm(nodeKey),
    );
  }

  /** A new self-signed ECDSA P-256 CA (what kubeadm's stand-in and tests use). */
  static async generate(
    commonName: string,
  ): Promise<{ ca: CertificateAuthority; certificatePem: string; keyPem: string }> {
    const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
    const now = Date.now();
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: randomSerial(),
      name: [{ CN: [commonName] }],
      notBefore: new Date(now - HOUR),
      notAfter: new Date(now + 10 * 365 * 24 * HOUR),
      keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
          true,
        ),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
    const keyPem = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' })
      .export({ type: 'pkcs8', format: 'pem' })
      .toString();
    const certificatePem = cert.toString('pem');
    return { ca: await CertificateAuthority.fromPem(certificatePem, keyPem), certificatePem, keyPem };
  }

  /** Issues a certificate for a key the CA is given directly (kubeadm-style PKI: API server, admin). */
  async issueCertificate(spec: CertificateRequestSpec, now = new Date()): Promise<string> {
    const publicKey = await webcrypto.subtle.importKey(
      'spki',
      spec.publicKey.export({ type: 'spki', format: 'der' }),
      webAlgorithm(spec.publicKey),
      true,
      ['verify'],
    );
    const usages =
      spec.usage === 'server'
        ? [x509.ExtendedKeyUsage.serverAuth]
        : spec.usage === 'client'
          ? [x509.ExtendedKeyUsage.clientAuth]
          : [x509.ExtendedKeyUsage.clientAuth, x509.ExtendedKeyUsage.serverAuth];
    const names = [
      ...(spec.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
      ...(spec.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ];
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: [...(spec.organisations ?? []).map((o) => ({ O: [o] })), { CN: [spec.commonName] }],
      issuer: this.certificate.subjectName,
      notBefore: new Date(now.getTime() - 2 * HOUR),
      notAfter: new Date(now.getTime() + (spec.validDays ?? 365) * 24 * HOUR),
      signingAlgorithm: this.algorithm,
      publicKey,
      signingKey: this.key,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension(usages),
        ...(names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : []),
      ],
    });
    return cert.toString('pem');
  }

  /**
   * Issues a kubelet certificate from a DER PKCS#10 request. The request must be signed by its
   * own key, have exactly one organisation "system:nodes" and CN "system:node:<name>" with a
   * valid node name. IP SANs are copied; DNS SANs are dropped. Valid from 2 h ago for 365 days;
   * digital signature + key encipherment; client and server auth; not a CA.
   */
  /**
   * Issues a kubelet certificate for the key in a verified CSR. With `instance` (the machine as
   * the platform registered it), the CSR may ask for no other name and no other address, and the
   * certificate carries exactly the registered name and IPs. Either way the CA builds the
   * subject itself: nothing else from the CSR's subject (an extra OU, say) reaches the certificate.
   */
  async issueKubeletCertificate(
    csrDer: Uint8Array,
    instance?: { name: string; ips: readonly string[] },
    now = new Date(),
  ): Promise<IssuedKubeletCertificate> {
    if (csrDer.length === 0 || csrDer.length > MAX_CSR_BYTES)
      throw new CsrError(`certificate request must be 1 to ${MAX_CSR_BYTES} bytes`);
    let csr: x509.Pkcs10CertificateRequest;
    try {
      csr = new x509.Pkcs10CertificateRequest(Buffer.from(csrDer));
    } catch {
      throw new CsrError('certificate request is not a DER PKCS#10 request');
    }
    let signed: boolean;
    try {
      signed = await csr.verify();
    } catch {
      signed = false;
    }
    if (!signed) throw new CsrError('certificate request signature does not verify');
    const organisations = csr.subjectName.getField('O');
    if (organisations.length !== 1 || organisations[0] !== 'system:nodes') {
      throw new CsrError(
        `certificate request must have exactly one organisation "system:nodes", has ${JSON.stringify(organisations)}`,
      );
    }
    const commonNames = csr.subjectName.getField('CN');
    const cn = commonNames[0] ?? '';
    if (commonNames.length !== 1 || !cn.startsWith('system:node:')) {
      throw new CsrError(`certificate request CN must be "system:node:<node name>", is ${JSON.stringify(commonNames)}`);
    }
    const nodeName = cn.slice('system:node:'.length);
    if (nodeName.length > 253 || !NODE_NAME.test(nodeName))
      throw new CsrError(`node name "${nodeName}" is not a valid Kubernetes node name`);
    const sanExtension = csr.extensions.find((ext) => ext.type === SUBJECT_ALT_NAME);
    const san = sanExtension === undefined ? undefined : new x509.SubjectAlternativeNameExtension(sanExtension.rawData);
    const requestedIps = (san?.names.items ?? []).filter((n) => n.type === 'ip').map((n) => n.value);
    if (instance !== undefined && nodeName !== instance.name) {
      throw new CsrError(
        `certificate request names node "${nodeName}", but this machine is registered as "${instance.name}"`,
      );
    }
    const unregistered = requestedIps.filter((ip) => instance !== undefined && !instance.ips.includes(ip));
    if (unregistered.length > 0) {
      throw new CsrError(
        `certificate request asks for IP addresses that are not registered for "${nodeName}": ${unregistered.join(', ')}`,
      );
    }
    const ips = instance === undefined ? requestedIps : [...instance.ips];
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: new x509.Name([{ O: ['system:nodes'] }, { CN: [`system:node:${nodeName}`] }]),
      issuer: this.certificate.subjectName,
      notBefore: new Date(now.getTime() - 2 * HOUR),
      notAfter: new Date(now.getTime() + 365 * 24 * HOUR),
      signingAlgorithm: this.algorithm,
      publicKey: csr.publicKey,
      signingKey: this.key,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth, x509.ExtendedKeyUsage.serverAuth]),
        ...(ips.length > 0
          ? [new x509.SubjectAlternativeNameExtension(ips.map((value) => ({ type: 'ip' as const, value })))]
          : []),
      ],
    });
    return { certificatePem: cert.toString('pem'), nodeName, ips };
  }
}

export interface CertificateRequestSpec {
  commonName: string;
  organisations?: readonly string[];
  /** The subject's public key (a Node KeyObject). */
  publicKey: KeyObject;
  ips?: readonly string[];
  dnsNames?: readonly string[];
  usage: 'server' | 'client' | 'both';
  validDays?: number;
}

/** A random positive serial below 2^128, as hex. */
function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString('hex');
}
