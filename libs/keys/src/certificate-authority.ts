import { createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import type { KeyObject, webcrypto as WebCrypto } from 'node:crypto';
import { checkKubeletClientRequest, checkKubeletServingRequest } from './kubelet-csr-checks.js';
import type {
  KubeletCertificateProfile,
  KubeletCertificateSubject,
  RegisteredNodeIdentity,
} from './kubelet-csr-checks.js';
import { x509 } from './x509-provider.js';

export interface IssuedKubeletCertificate {
  certificatePem: string;
  /** Node name from the CSR's CN (the registered one), without the "system:node:" prefix. */
  nodeName: string;
  /** IP SANs of the certificate. */
  ips: string[];
  /** DNS SANs of the certificate. */
  dnsNames: string[];
}

const HOUR = 3600_000;

/** The algorithm WebCrypto needs for a key, from Node's view of it. */
function webAlgorithm(key: KeyObject): WebCrypto.EcKeyImportParams | WebCrypto.RsaHashedImportParams {
  if (key.asymmetricKeyType === 'ec') return { name: 'ECDSA', namedCurve: 'P-256' };
  if (key.asymmetricKeyType === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  throw new RangeError(`unsupported CA key type ${key.asymmetricKeyType ?? 'unknown'}`);
}

/** Digital signature, plus key encipherment for RSA keys only (an ECDSA key cannot encipher). */
function keyUsages(rsa: boolean): x509.KeyUsagesExtension {
  if (!rsa) return new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true);
  return new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true);
}

function signingAlgorithm(key: KeyObject): WebCrypto.EcdsaParams | WebCrypto.Algorithm {
  return key.asymmetricKeyType === 'ec' ? { name: 'ECDSA', hash: 'SHA-256' } : { name: 'RSASSA-PKCS1-v1_5' };
}

/**
 * The cluster CA (`/etc/kubernetes/pki/ca.{crt,key}`). Signs kubelet client and serving
 * certificates from node CSRs after checking them against the profile (kubelet-csr-checks.ts); the key may be EC (SEC1 or PKCS#8) or RSA.
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
        keyUsages(spec.publicKey.asymmetricKeyType === 'rsa'),
        new x509.ExtendedKeyUsageExtension(usages),
        ...(names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : []),
      ],
    });
    return cert.toString('pem');
  }

  /**
   * The kubelet's client certificate (signer kubernetes.io/kube-apiserver-client-kubelet): the
   * node's credential towards the API server. Subject O=system:nodes, CN=system:node:<name>; client
   * auth only; no subjectAltName. With `instance`, the request may name no other node.
   */
  async issueKubeletClientCertificate(
    csrDer: Uint8Array,
    instance?: RegisteredNodeIdentity,
    now = new Date(),
  ): Promise<IssuedKubeletCertificate> {
    return this.issueKubelet('client', await checkKubeletClientRequest(csrDer, instance), now);
  }

  /**
   * The kubelet's serving certificate (signer kubernetes.io/kubelet-serving): what the kubelet
   * presents to the API server. Server auth only; DNS SAN the node name, IP SANs the registered
   * IPs (with `instance`; without it, the IPs the request asks for).
   */
  async issueKubeletServingCertificate(
    csrDer: Uint8Array,
    instance?: RegisteredNodeIdentity,
    now = new Date(),
  ): Promise<IssuedKubeletCertificate> {
    return this.issueKubelet('serving', await checkKubeletServingRequest(csrDer, instance), now);
  }

  /**
   * Signs a checked request with its profile. The CA builds subject and extensions itself: nothing
   * the request asked for beyond key, name and addresses (an extra OU, a CA flag, code signing)
   * reaches the certificate. Valid from 2 h ago (clock skew) for 365 days.
   */
  private async issueKubelet(
    profile: KubeletCertificateProfile,
    subject: KubeletCertificateSubject,
    now: Date,
  ): Promise<IssuedKubeletCertificate> {
    const { nodeName, ips, dnsNames } = subject;
    const names = [
      ...dnsNames.map((value) => ({ type: 'dns' as const, value })),
      ...ips.map((value) => ({ type: 'ip' as const, value })),
    ];
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: new x509.Name([{ O: ['system:nodes'] }, { CN: [`system:node:${nodeName}`] }]),
      issuer: this.certificate.subjectName,
      notBefore: new Date(now.getTime() - 2 * HOUR),
      notAfter: new Date(now.getTime() + 365 * 24 * HOUR),
      signingAlgorithm: this.algorithm,
      publicKey: subject.publicKey,
      signingKey: this.key,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        keyUsages(subject.rsa),
        new x509.ExtendedKeyUsageExtension([
          profile === 'client' ? x509.ExtendedKeyUsage.clientAuth : x509.ExtendedKeyUsage.serverAuth,
        ]),
        ...(names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : []),
      ],
    });
    return { certificatePem: cert.toString('pem'), nodeName, ips, dnsNames };
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
