import type { KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import { publicKeyBits } from '@constellation/der';
import { CertificationRequestError, parseCertificationRequest } from './certification-request.js';
import type { VerifiedCertificationRequest } from './certification-request.js';

/*
 * The two kubelet certificate profiles of Kubernetes, checked on a node's PKCS#10 request. The rules
 * mirror pkg/apis/certificates/helpers.go: ValidateKubeletClientCSR (signer
 * kubernetes.io/kube-apiserver-client-kubelet) and ValidateKubeletServingCSR (signer
 * kubernetes.io/kubelet-serving). Like the signer (pkg/controller/certificates/authority), the CA
 * takes only the key, the node name and the names from a request; usages and every other
 * extension a request asks for are ignored, the profile sets them.
 */

/** A certificate request that the CA refuses; the message says which check failed. */
export class CsrError extends Error {
  override readonly name = 'CsrError';
}

export type KubeletCertificateProfile = 'client' | 'serving';

/** The machine as the platform registered it: what a certificate may name comes from here. */
export interface RegisteredNodeIdentity {
  name: string;
  ips: readonly string[];
}

/** What a checked request contributes to a certificate. */
export interface KubeletCertificateSubject {
  nodeName: string;
  publicKey: Buffer;
  /** Whether the key is RSA: only RSA keys get key encipherment (kubeletServingRequiredUsagesNoRSA). */
  rsa: boolean;
  /** IP SANs of the certificate: none for the client profile. */
  ips: string[];
  /** DNS SANs of the certificate: none for the client profile, the node name for the serving one. */
  dnsNames: string[];
}

const NODE_PREFIX = 'system:node:';
/** A DNS-1123 subdomain (the rule for node names, apimachinery IsDNS1123Subdomain). */
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const MAX_CSR_BYTES = 16 * 1024;
const EC_CURVES = new Set(['prime256v1', 'secp384r1']);
const MIN_RSA_BITS = 2048;
const MAX_RSA_BITS = 8192;
const MAX_RSA_EXPONENT = 2n ** 31n - 1n;

interface ParsedRequest {
  nodeName: string;
  publicKey: Buffer;
  rsa: boolean;
  ips: string[];
  dnsNames: string[];
  /** SANs of other kinds (email, URI, ...) as "type:value". */
  otherNames: string[];
}

/** Parses a DER PKCS#10 request and checks what both profiles require: signature, key, subject. */
function parseRequest(csrDer: Uint8Array): ParsedRequest {
  if (csrDer.length === 0 || csrDer.length > MAX_CSR_BYTES)
    throw new CsrError(`certificate request must be 1 to ${MAX_CSR_BYTES} bytes`);
  let csr: VerifiedCertificationRequest;
  try {
    csr = parseCertificationRequest(csrDer);
  } catch (err) {
    if (err instanceof CertificationRequestError) throw new CsrError(err.message);
    throw err;
  }
  const rsa = checkKey(csr.publicKey);
  // OpenSSL reads compressed points, Go's x509 (the API server's TLS) does not: the node's
  // certificate would be unreadable where it is used.
  if (!rsa && publicKeyBits(csr.subjectPublicKeyInfo)[0] !== 0x04) {
    throw new CsrError('certificate request EC public key must be an uncompressed point (X9.62 form 0x04)');
  }
  const organisations = csr.subject.get('O') ?? [];
  if (organisations.length !== 1 || organisations[0] !== 'system:nodes') {
    throw new CsrError(
      `subject organization is not system:nodes: the request must have exactly one organisation "system:nodes", has ${JSON.stringify(organisations)}`,
    );
  }
  const commonNames = csr.subject.get('CN') ?? [];
  const cn = commonNames[0] ?? '';
  if (commonNames.length !== 1 || !cn.startsWith(NODE_PREFIX)) {
    throw new CsrError(
      `subject common name does not begin with system:node: the request's CN must be "system:node:<node name>", is ${JSON.stringify(commonNames)}`,
    );
  }
  const nodeName = cn.slice(NODE_PREFIX.length);
  if (nodeName.length > 253 || !NODE_NAME.test(nodeName))
    throw new CsrError(`node name "${nodeName}" is not a valid Kubernetes node name`);
  const names = csr.subjectAltNames;
  for (const { type, value } of names) {
    // The decoder writes other lengths as CIDR or hex text, which no certificate should carry.
    if (type === 'ip' && isIP(value) === 0)
      throw new CsrError(`IP subjectAltName "${value}" is not a 4- or 16-byte address`);
  }
  return {
    nodeName,
    publicKey: csr.subjectPublicKeyInfo,
    rsa,
    ips: names.filter((n) => n.type === 'ip').map((n) => n.value),
    dnsNames: names.filter((n) => n.type === 'dns').map((n) => n.value),
    otherNames: names.filter((n) => n.type !== 'ip' && n.type !== 'dns').map((n) => `${n.type}:${n.value}`),
  };
}

/** Names for a refusal: the first few, and how many more, so a huge list stays a short message. */
function listed(items: readonly string[]): string {
  const shown = 10;
  const more = items.length - shown;
  return more > 0 ? `${items.slice(0, shown).join(', ')} and ${more} more` : items.join(', ');
}

/** ECDSA P-256/P-384 or RSA of at least 2048 bits; returns whether it is RSA. */
function checkKey(key: KeyObject): boolean {
  if (key.asymmetricKeyType === 'ec' && EC_CURVES.has(key.asymmetricKeyDetails?.namedCurve ?? '')) return false;
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (key.asymmetricKeyType === 'rsa' && bits > MAX_RSA_BITS) {
    throw new CsrError(
      `certificate request key rsa (${bits} bits) is not accepted: RSA keys may have at most ${MAX_RSA_BITS} bits`,
    );
  }
  if (key.asymmetricKeyType === 'rsa' && bits >= MIN_RSA_BITS) {
    // Go's crypto/rsa (the API server's TLS) refuses exponents above 2^31-1 and Go's TLS keys
    // above 8192 bits: such a certificate would not work, and a huge exponent costs this CA a
    // private-key operation's time to verify the request.
    const e = key.asymmetricKeyDetails?.publicExponent ?? 0n;
    if (e < 3n || e > MAX_RSA_EXPONENT || e % 2n === 0n) {
      throw new CsrError(
        `certificate request RSA public exponent ${e} is not accepted: it must be odd, from 3 to 2^31-1`,
      );
    }
    return true;
  }
  const details = key.asymmetricKeyDetails?.namedCurve ?? `${bits === 0 ? '?' : bits} bits`;
  throw new CsrError(
    `certificate request key ${key.asymmetricKeyType ?? 'unknown'} (${details}) is not accepted: use ECDSA P-256/P-384 or RSA with at least ${MIN_RSA_BITS} bits`,
  );
}

function checkRegisteredName(nodeName: string, instance: RegisteredNodeIdentity | undefined): void {
  if (instance !== undefined && nodeName !== instance.name) {
    throw new CsrError(
      `certificate request names node "${nodeName}", but this machine is registered as "${instance.name}"`,
    );
  }
}

/**
 * The kubelet client profile (ValidateKubeletClientCSR): a node credential that names the node in
 * its subject and carries no subjectAltName of any kind.
 */
export function checkKubeletClientRequest(
  csrDer: Uint8Array,
  instance?: RegisteredNodeIdentity,
): KubeletCertificateSubject {
  const request = parseRequest(csrDer);
  checkRegisteredName(request.nodeName, instance);
  const sans = [
    ...request.dnsNames.map((n) => `dns:${n}`),
    ...request.ips.map((n) => `ip:${n}`),
    ...request.otherNames,
  ];
  if (sans.length > 0) {
    throw new CsrError(
      `subjectAltNames are not allowed in a kubelet client certificate (ValidateKubeletClientCSR); the request asks for ${listed(sans)}`,
    );
  }
  return { nodeName: request.nodeName, publicKey: request.publicKey, rsa: request.rsa, ips: [], dnsNames: [] };
}

/**
 * The kubelet serving profile (ValidateKubeletServingCSR): DNS and IP subjectAltNames only. With a
 * registered instance, the request may name no other node, DNS name or address, and the
 * certificate carries exactly the registered IPs; the DNS name is always the node name.
 */
export function checkKubeletServingRequest(
  csrDer: Uint8Array,
  instance?: RegisteredNodeIdentity,
): KubeletCertificateSubject {
  const request = parseRequest(csrDer);
  const { nodeName } = request;
  checkRegisteredName(nodeName, instance);
  if (request.otherNames.length > 0) {
    throw new CsrError(
      `only DNS and IP subjectAltNames are allowed in a kubelet serving certificate (ValidateKubeletServingCSR); the request asks for ${listed(request.otherNames)}`,
    );
  }
  const foreignDns = request.dnsNames.filter((name) => name !== nodeName);
  if (foreignDns.length > 0) {
    throw new CsrError(
      `certificate request asks for DNS names other than the node name "${nodeName}": ${listed(foreignDns)}`,
    );
  }
  const unregistered = instance === undefined ? [] : request.ips.filter((ip) => !instance.ips.includes(ip));
  if (unregistered.length > 0) {
    throw new CsrError(
      `certificate request asks for IP addresses that are not registered for "${nodeName}": ${listed(unregistered)}`,
    );
  }
  return {
    nodeName,
    publicKey: request.publicKey,
    rsa: request.rsa,
    ips: instance === undefined ? [...new Set(request.ips)] : [...instance.ips],
    dnsNames: [nodeName],
  };
}
