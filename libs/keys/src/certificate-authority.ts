import { X509Certificate, createHash, createPrivateKey, generateKeyPair } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { AsnParser } from '@peculiar/asn1-schema';
import {
  BasicConstraints,
  Certificate,
  ExtendedKeyUsage,
  KeyUsage,
  KeyUsageFlags,
  SubjectKeyIdentifier,
  SubjectPublicKeyInfo,
  id_ce_basicConstraints,
  id_ce_extKeyUsage,
  id_ce_keyUsage,
  id_ce_subjectKeyIdentifier,
  id_kp_clientAuth,
  id_kp_serverAuth,
} from '@peculiar/asn1-x509';
import type { Extension, Name } from '@peculiar/asn1-x509';
import {
  certificatePem,
  distinguishedName,
  extension,
  signCertificate,
  subjectAltNameExtension,
} from './certificate-builder.js';
import { checkKubeletClientRequest, checkKubeletServingRequest } from './kubelet-csr-checks.js';
import type {
  KubeletCertificateProfile,
  KubeletCertificateSubject,
  RegisteredNodeIdentity,
} from './kubelet-csr-checks.js';

export interface IssuedKubeletCertificate {
  certificatePem: string;
  /** Node name from the CSR's CN (the registered one), without the "system:node:" prefix. */
  nodeName: string;
  /** IP SANs of the certificate. */
  ips: string[];
  /** DNS SANs of the certificate. */
  dnsNames: string[];
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

const HOUR = 3600_000;
const DAY = 24 * HOUR;

/** Digital signature, plus key encipherment for RSA keys only (an ECDSA key cannot encipher). */
function leafKeyUsage(rsa: boolean): Extension {
  const flags = KeyUsageFlags.digitalSignature | (rsa ? KeyUsageFlags.keyEncipherment : 0);
  return extension(id_ce_keyUsage, true, new KeyUsage(flags));
}

/** The extensions of an end-entity certificate: not a CA, its usages, its names. */
function leafExtensions(
  rsa: boolean,
  usages: readonly string[],
  names: { dnsNames: readonly string[]; ips: readonly string[] },
): Extension[] {
  const altNames = subjectAltNameExtension(names);
  return [
    extension(id_ce_basicConstraints, true, new BasicConstraints({ cA: false })),
    leafKeyUsage(rsa),
    extension(id_ce_extKeyUsage, false, new ExtendedKeyUsage([...usages])),
    ...(altNames === undefined ? [] : [altNames]),
  ];
}

function spkiOf(key: KeyObject): SubjectPublicKeyInfo {
  return AsnParser.parse(key.export({ type: 'spki', format: 'der' }), SubjectPublicKeyInfo);
}

/** Hands a synchronous result or error over as a promise (this class's API is asynchronous). */
function settled<T>(work: () => T): Promise<T> {
  return new Promise<T>((resolve) => {
    resolve(work());
  });
}

/**
 * The cluster CA (`/etc/kubernetes/pki/ca.{crt,key}`). Signs kubelet client and serving
 * certificates from node CSRs after checking them against the profile (kubelet-csr-checks.ts);
 * the key may be EC (SEC1 or PKCS#8) or RSA. Certificates are built with @peculiar/asn1-x509 and
 * signed by Node's crypto: a join signs two, so this is on every join's path.
 */
export class CertificateAuthority {
  readonly certificatePem: string;
  private readonly subject: Name;
  private readonly key: KeyObject;

  private constructor(certificatePemText: string, subject: Name, key: KeyObject) {
    this.certificatePem = certificatePemText;
    this.subject = subject;
    this.key = key;
  }

  static fromPem(certificatePemText: string, keyPem: string): Promise<CertificateAuthority> {
    return settled(() => {
      const key = createPrivateKey(keyPem);
      if (key.asymmetricKeyType !== 'ec' && key.asymmetricKeyType !== 'rsa') {
        throw new RangeError(`unsupported CA key type ${key.asymmetricKeyType ?? 'unknown'}`);
      }
      const certificate = AsnParser.parse(new X509Certificate(certificatePemText).raw, Certificate);
      return new CertificateAuthority(certificatePemText, certificate.tbsCertificate.subject, key);
    });
  }

  /** A new self-signed ECDSA P-256 CA (what kubeadm's stand-in and tests use). */
  static async generate(
    commonName: string,
  ): Promise<{ ca: CertificateAuthority; certificatePem: string; keyPem: string }> {
    const { publicKey, privateKey } = await promisify(generateKeyPair)('ec', { namedCurve: 'P-256' });
    const now = Date.now();
    const spki = spkiOf(publicKey);
    const name = distinguishedName([['CN', commonName]]);
    const der = signCertificate({
      issuer: name,
      subject: name,
      subjectPublicKeyInfo: spki,
      notBefore: new Date(now - HOUR),
      notAfter: new Date(now + 10 * 365 * DAY),
      extensions: [
        extension(id_ce_basicConstraints, true, new BasicConstraints({ cA: true })),
        extension(
          id_ce_keyUsage,
          true,
          new KeyUsage(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign | KeyUsageFlags.digitalSignature),
        ),
        // RFC 5280 §4.2.1.2 method (1): SHA-1 of the subjectPublicKey bits.
        extension(
          id_ce_subjectKeyIdentifier,
          false,
          new SubjectKeyIdentifier(createHash('sha1').update(new Uint8Array(spki.subjectPublicKey)).digest()),
        ),
      ],
      signingKey: privateKey,
    });
    const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const pem = certificatePem(der);
    return { ca: await CertificateAuthority.fromPem(pem, keyPem), certificatePem: pem, keyPem };
  }

  /** Issues a certificate for a key the CA is given directly (kubeadm-style PKI: API server, admin). */
  issueCertificate(spec: CertificateRequestSpec, now = new Date()): Promise<string> {
    return settled(() => {
      const usages =
        spec.usage === 'server'
          ? [id_kp_serverAuth]
          : spec.usage === 'client'
            ? [id_kp_clientAuth]
            : [id_kp_clientAuth, id_kp_serverAuth];
      const der = signCertificate({
        issuer: this.subject,
        subject: distinguishedName([
          ...(spec.organisations ?? []).map((o) => ['O', o] as const),
          ['CN', spec.commonName] as const,
        ]),
        subjectPublicKeyInfo: spkiOf(spec.publicKey),
        notBefore: new Date(now.getTime() - 2 * HOUR),
        notAfter: new Date(now.getTime() + (spec.validDays ?? 365) * DAY),
        extensions: leafExtensions(spec.publicKey.asymmetricKeyType === 'rsa', usages, {
          ips: spec.ips ?? [],
          dnsNames: spec.dnsNames ?? [],
        }),
        signingKey: this.key,
      });
      return certificatePem(der);
    });
  }

  /**
   * The kubelet's client certificate (signer kubernetes.io/kube-apiserver-client-kubelet): the
   * node's credential towards the API server. Subject O=system:nodes, CN=system:node:<name>; client
   * auth only; no subjectAltName. With `instance`, the request may name no other node.
   */
  issueKubeletClientCertificate(
    csrDer: Uint8Array,
    instance?: RegisteredNodeIdentity,
    now = new Date(),
  ): Promise<IssuedKubeletCertificate> {
    return settled(() => this.issueKubelet('client', checkKubeletClientRequest(csrDer, instance), now));
  }

  /**
   * The kubelet's serving certificate (signer kubernetes.io/kubelet-serving): what the kubelet
   * presents to the API server. Server auth only; DNS SAN the node name, IP SANs the registered
   * IPs (with `instance`; without it, the IPs the request asks for).
   */
  issueKubeletServingCertificate(
    csrDer: Uint8Array,
    instance?: RegisteredNodeIdentity,
    now = new Date(),
  ): Promise<IssuedKubeletCertificate> {
    return settled(() => this.issueKubelet('serving', checkKubeletServingRequest(csrDer, instance), now));
  }

  /**
   * Signs a checked request with its profile. The CA builds subject and extensions itself: nothing
   * the request asked for beyond key, name and addresses (an extra OU, a CA flag, code signing)
   * reaches the certificate. Valid from 2 h ago (clock skew) for 365 days.
   */
  private issueKubelet(
    profile: KubeletCertificateProfile,
    subject: KubeletCertificateSubject,
    now: Date,
  ): IssuedKubeletCertificate {
    const { nodeName, ips, dnsNames } = subject;
    const der = signCertificate({
      issuer: this.subject,
      subject: distinguishedName([
        ['O', 'system:nodes'],
        ['CN', `system:node:${nodeName}`],
      ]),
      subjectPublicKeyInfo: subject.publicKey,
      notBefore: new Date(now.getTime() - 2 * HOUR),
      notAfter: new Date(now.getTime() + 365 * DAY),
      extensions: leafExtensions(subject.rsa, [profile === 'client' ? id_kp_clientAuth : id_kp_serverAuth], {
        dnsNames,
        ips,
      }),
      signingKey: this.key,
    });
    return { certificatePem: certificatePem(der), nodeName, ips, dnsNames };
  }
}
