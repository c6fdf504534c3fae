import { X509Certificate, createHash, createPrivateKey, generateKeyPair } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import {
  TAG,
  boolean,
  namedBits,
  octetString,
  oid,
  publicKeyBits,
  readCertificate,
  readOnly,
  sequence,
} from '@constellation/der';
import {
  KEY_USAGE,
  OID,
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
function leafKeyUsage(rsa: boolean): Buffer {
  const bits = rsa ? [KEY_USAGE.digitalSignature, KEY_USAGE.keyEncipherment] : [KEY_USAGE.digitalSignature];
  return extension(OID.keyUsage, true, namedBits(bits));
}

/** The extensions of an end-entity certificate: not a CA (cA FALSE is the default: an empty SEQUENCE), its usages, its names. */
function leafExtensions(
  rsa: boolean,
  usages: readonly string[],
  names: { dnsNames: readonly string[]; ips: readonly string[] },
): Buffer[] {
  const altNames = subjectAltNameExtension(names);
  return [
    extension(OID.basicConstraints, true, sequence()),
    leafKeyUsage(rsa),
    extension(OID.extKeyUsage, false, sequence(...usages.map((usage) => oid(usage)))),
    ...(altNames === undefined ? [] : [altNames]),
  ];
}

const spkiOf = (key: KeyObject): Buffer => key.export({ type: 'spki', format: 'der' });

/** The subject Name of a DER certificate, as encoded: what certificates it issues name as issuer. */
function subjectOf(certificateDer: Buffer): Buffer {
  return Buffer.from(readCertificate(readOnly(certificateDer, TAG.sequence, 'CA certificate').content).subject.raw);
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
 * the key may be EC (SEC1 or PKCS#8) or RSA. Certificates are written as DER (certificate-builder.ts)
 * and signed by Node's crypto: a join signs two, so this is on every join's path.
 */
export class CertificateAuthority {
  readonly certificatePem: string;
  /** The CA's subject Name, DER, byte for byte as its certificate encodes it. */
  private readonly subject: Buffer;
  private readonly key: KeyObject;

  private constructor(certificatePemText: string, subject: Buffer, key: KeyObject) {
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
      return new CertificateAuthority(certificatePemText, subjectOf(new X509Certificate(certificatePemText).raw), key);
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
        extension(OID.basicConstraints, true, sequence(boolean(true))),
        extension(
          OID.keyUsage,
          true,
          namedBits([KEY_USAGE.digitalSignature, KEY_USAGE.keyCertSign, KEY_USAGE.cRLSign]),
        ),
        // RFC 5280 §4.2.1.2 method (1): SHA-1 of the subjectPublicKey bits.
        extension(
          OID.subjectKeyIdentifier,
          false,
          octetString(createHash('sha1').update(publicKeyBits(spki)).digest()),
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
          ? [OID.serverAuth]
          : spec.usage === 'client'
            ? [OID.clientAuth]
            : [OID.clientAuth, OID.serverAuth];
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
      extensions: leafExtensions(subject.rsa, [profile === 'client' ? OID.clientAuth : OID.serverAuth], {
        dnsNames,
        ips,
      }),
      signingKey: this.key,
    });
    return { certificatePem: certificatePem(der), nodeName, ips, dnsNames };
  }
}
