import { X509Certificate as NodeX509Certificate, createHash, createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import {
  DerError,
  DerFields,
  TAG,
  attributeValueText,
  isKnownSignatureAlgorithm,
  readCanonicalSpki,
  readCertificate,
  readNameAttributes,
  readTlv,
  spkiKeyJwk,
  verifySignature,
} from '@constellation/der';
import type { DerExtension, Tlv } from '@constellation/der';
import { AttestationError } from './errors.js';
import {
  KEY_USAGE,
  readBasicConstraints,
  readDirectoryNames,
  readExtendedKeyUsage,
  readKeyUsage,
} from './ek-extensions.js';
import { nameText } from './name-text.js';

/** EK certificates and CA certificates are a few KiB at most; anything bigger is refused unparsed. */
export const MAX_EK_CERTIFICATE_BYTES = 8 * 1024;
/** Longest chain of intermediates accepted between an EK certificate and a pinned root. */
export const MAX_EK_INTERMEDIATES = 4;
/**
 * Most candidate intermediates accepted in one call (the node's own plus configured ones); each
 * is parsed, and only those named as an issuer cost a signature check.
 */
export const MAX_EK_INTERMEDIATE_CANDIDATES = 16;

export interface VerifyEkCertificateOptions {
  /** The EK certificate, DER (as read from the TPM's NV index). */
  certificate: Uint8Array;
  /** Intermediate CA certificates, DER, in any order; unused ones are ignored. */
  intermediates: readonly Uint8Array[];
  /** Pinned root certificates, DER (see pemCertificatesToDer). */
  roots: readonly Uint8Array[];
  /** Time at which every certificate of the path must be valid; now by default. */
  now?: Date;
}

/** TPM identity from the EK certificate's subjectAltName directoryName (TCG EK Credential Profile). */
export interface EkTpmIdentity {
  manufacturer?: string;
  model?: string;
  version?: string;
}

export interface VerifiedEkCertificate {
  subject: string;
  issuer: string;
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
  /** DER SubjectPublicKeyInfo of the EK. */
  spki: Buffer;
  /** Subjects from the EK certificate to the pinned root. */
  path: string[];
  tpm: EkTpmIdentity;
}

const OID = {
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectDirectoryAttributes: '2.5.29.9',
  certificatePolicies: '2.5.29.32',
  anyExtendedKeyUsage: '2.5.29.37.0',
  ekCertificate: '2.23.133.8.1',
  tpmManufacturer: '2.23.133.2.1',
  tpmModel: '2.23.133.2.2',
  tpmVersion: '2.23.133.2.3',
} as const;

/**
 * Critical extensions this validator understands. Anything else critical is refused (RFC 5280
 * §4.2). certificatePolicies is accepted because no policy constraints are processed;
 * subjectDirectoryAttributes carries the TPM specification attributes.
 */
const KNOWN_CRITICAL = new Set<string>([
  OID.basicConstraints,
  OID.keyUsage,
  OID.extKeyUsage,
  OID.subjectAltName,
  OID.subjectDirectoryAttributes,
  OID.certificatePolicies,
]);

type Role = 'EK certificate' | 'intermediate CA certificate' | 'pinned root certificate';

interface Parsed {
  readonly der: Buffer;
  readonly role: Role;
  /** The signed part, as received. */
  readonly tbs: Buffer;
  /** signatureAlgorithm (OID), the same in the certificate and in its signed part. */
  readonly signatureAlgorithm: string;
  /** signatureValue's octets. */
  readonly signature: Buffer;
  // Decoded on parse, so malformed content fails there with one message.
  readonly subject: string;
  readonly issuer: string;
  readonly serialNumber: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly spki: Buffer;
  readonly extensions: readonly DerExtension[];
}

function fail(message: string): never {
  throw new AttestationError('ek-certificate', message);
}

/** A certificate's subject for messages; EK certificates may have an empty one. */
function label(cert: Parsed): string {
  return cert.subject === '' ? `(empty subject, serial ${cert.serialNumber})` : `"${cert.subject}"`;
}

/**
 * Parsed certificates and signature checks by SHA-256 of their DER: every join presents the same
 * intermediates and roots, and re-parsing and re-verifying them was most of a join's certificate
 * work. Only the content decides, so a cached answer is the answer; validity times are still
 * checked on every call. Bounded: the oldest entries go first.
 */
class DerCache<T> {
  private readonly entries = new Map<string, T>();
  constructor(private readonly max: number) {}
  get(key: string, make: () => T): T {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;
    const value = make();
    this.entries.set(key, value);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
    return value;
  }
}
const parsedCertificates = new DerCache<Parsed>(256);
const verifiedSignatures = new DerCache<boolean>(256);
const digest = (der: Uint8Array): string => createHash('sha256').update(der).digest('hex');

function parse(der: Uint8Array, role: Role, what: string): Parsed {
  if (der.length > MAX_EK_CERTIFICATE_BYTES) {
    fail(`${what} is ${der.length} bytes, more than the ${MAX_EK_CERTIFICATE_BYTES} allowed`);
  }
  if (der.length === 0) fail(`${what} is empty`);
  // Failures are not cached (they throw); each role gets its own entry, since it is part of Parsed.
  return parsedCertificates.get(`${role}:${digest(der)}`, () => parseUncached(der, role, what));
}

/**
 * Name text by the name's DER: every EK certificate of a vendor names the same issuer, so each
 * distinct name is decoded once. Bounded like the certificate cache.
 */
const nameTexts = new DerCache<string>(256);

function nameOf(name: Tlv): string {
  return nameTexts.get(name.raw.toString('base64'), () => nameText(name));
}

/**
 * The certificate's one encoding: its envelope must be DER and end where the input ends. NV
 * indexes are often larger than the certificate they hold, and a BER envelope (a long length
 * form, say) is outside the signature: OpenSSL reads one, Go refuses it (red-team finding).
 */
function envelope(bytes: Buffer, what: string): { content: Buffer; trailing: number } {
  let outer: ReturnType<typeof readTlv>;
  try {
    outer = readTlv(bytes);
  } catch (err) {
    if (err instanceof DerError && /not minimal|length encoding/.test(err.message)) {
      fail(`${what} is not DER-encoded (its envelope is not in the one DER encoding: ${err.message})`);
    }
    throw err;
  }
  if (outer.tag !== TAG.sequence) throw new DerError('certificate is not a SEQUENCE');
  return { content: outer.content, trailing: bytes.length - outer.end };
}

/**
 * Reads the certificate's fields with libs/der's walker (readCertificate: each field's tag
 * checked): a tenth of a schema parser's cost on every join, and no OpenSSL object for a
 * certificate whose signature algorithm signedBy checks itself.
 */
function parseUncached(der: Uint8Array, role: Role, what: string): Parsed {
  const bytes = Buffer.from(der);
  let parsed: Parsed;
  try {
    const { content, trailing } = envelope(bytes, what);
    const fields = readCertificate(content);
    const spkiFields = new DerFields(fields.subjectPublicKeyInfo.content, 'subjectPublicKeyInfo');
    spkiFields.next(TAG.sequence, 'algorithm');
    if (spkiFields.next(TAG.bitString, 'subjectPublicKey').content.length <= 1) {
      throw new DerError('empty subjectPublicKeyInfo');
    }
    if (trailing > 0) fail(`${what} is followed by ${trailing} bytes that are not part of the certificate`);
    parsed = {
      der: bytes,
      role,
      tbs: Buffer.from(fields.tbs.raw),
      signatureAlgorithm: fields.signatureAlgorithm,
      signature: Buffer.from(fields.signature),
      subject: nameOf(fields.subject),
      issuer: nameOf(fields.issuer),
      serialNumber: fields.serialNumber.toString('hex'),
      notBefore: new Date(fields.notBefore),
      notAfter: new Date(fields.notAfter),
      spki: Buffer.from(fields.subjectPublicKeyInfo.raw),
      // Values still to be decoded where a check needs them; an explicitly encoded critical FALSE
      // (not DER) is read as FALSE, as OpenSSL and Go read it: vendors' EK certificates carry
      // such quirks, and the signature covers them.
      extensions: fields.extensions,
    };
  } catch (err) {
    if (err instanceof AttestationError) throw err;
    fail(`${what} is not a well-formed DER X.509 certificate (${err instanceof Error ? err.message : String(err)})`);
  }
  return parsed;
}

/** Issuers' keys, by certificate: intermediates and roots sign every join's EK certificate. */
const issuerKeys = new WeakMap<Parsed, KeyObject>();

function publicKeyOf(issuer: Parsed): KeyObject {
  let key = issuerKeys.get(issuer);
  if (key === undefined) {
    const canonical = readCanonicalSpki(issuer.spki);
    key =
      canonical === undefined
        ? createPublicKey({ key: issuer.spki, format: 'der', type: 'spki' })
        : createPublicKey({ key: spkiKeyJwk(canonical), format: 'jwk' });
    issuerKeys.set(issuer, key);
  }
  return key;
}

function checkSignature(child: Parsed, issuer: Parsed): boolean {
  const key = publicKeyOf(issuer);
  // ECDSA and RSA PKCS#1 v1.5 with SHA-2 (what EK CAs use) directly over the signed bytes; any
  // other algorithm (RSASSA-PSS, SHA-1) goes to OpenSSL's X.509 verification.
  if (!isKnownSignatureAlgorithm(child.signatureAlgorithm)) return new NodeX509Certificate(child.der).verify(key);
  return verifySignature(child.signatureAlgorithm, child.tbs, key, child.signature);
}

function signedBy(child: Parsed, issuer: Parsed): boolean {
  return verifiedSignatures.get(`${digest(child.der)}:${digest(issuer.der)}`, () => {
    try {
      return checkSignature(child, issuer);
    } catch {
      return false; // unsupported or mismatched algorithms, an unreadable key: the signature does not verify
    }
  });
}

/**
 * Walks from the EK certificate to a pinned root. Issuers are found by name and accepted only
 * when the signature verifies with their key, so a root is matched by its key, not its name.
 */
function buildPath(leaf: Parsed, intermediates: Parsed[], roots: Parsed[], now: Date): Parsed[] {
  const validNow = (c: Parsed): boolean => c.notBefore <= now && now <= c.notAfter;
  const path = [leaf];
  // An individually pinned EK certificate is its own path.
  if (roots.some((root) => root.der.equals(leaf.der))) return path;
  const unused = [...intermediates];
  for (;;) {
    const current = path[path.length - 1] as Parsed;
    const issuerName = current.issuer;
    // Roots first; then, of renewed issuers sharing name and key, one that is valid now.
    const byName = [...roots, ...unused.filter(validNow), ...unused.filter((c) => !validNow(c))].filter(
      (c) => c.subject === issuerName,
    );
    let found: Parsed | undefined;
    for (const candidate of byName) {
      if (signedBy(current, candidate)) {
        found = candidate;
        break;
      }
    }
    if (found === undefined) {
      const first = byName[0];
      if (first !== undefined) {
        fail(`signature of ${label(current)} does not verify with ${first.role} ${label(first)}`);
      }
      fail(
        `${current.role} ${label(current)} does not chain to a pinned root (issuer "${issuerName}" is neither a pinned root nor a supplied intermediate)`,
      );
    }
    if (found.role !== 'pinned root certificate' && path.length > MAX_EK_INTERMEDIATES) {
      fail(
        `EK certificate path needs more than ${MAX_EK_INTERMEDIATES} intermediate certificates to reach a pinned root`,
      );
    }
    path.push(found);
    if (found.role === 'pinned root certificate') return path;
    unused.splice(unused.indexOf(found), 1);
  }
}

function checkValidity(entry: Parsed, now: Date): void {
  const { role, notBefore, notAfter } = entry;
  if (now.getTime() < notBefore.getTime()) {
    fail(`${role} ${label(entry)} is not valid before ${notBefore.toISOString()} (now ${now.toISOString()})`);
  }
  if (now.getTime() > notAfter.getTime()) {
    fail(`${role} ${label(entry)} expired on ${notAfter.toISOString()} (now ${now.toISOString()})`);
  }
}

function checkCriticalExtensions(entry: Parsed): void {
  for (const ext of entry.extensions) {
    if (ext.critical && !KNOWN_CRITICAL.has(ext.extnID)) {
      fail(`${entry.role} ${label(entry)} has an unrecognised critical extension ${ext.extnID}`);
    }
  }
}

/**
 * RFC 5280 §4.2: an extension appears at most once. With two, the checks here read the first and
 * another reader may read the second (a basicConstraints saying CA, then not); OpenSSL and Go
 * refuse such certificates, and so does this path (red-team finding).
 */
function checkExtensionsOnce(entry: Parsed): void {
  const seen = new Set<string>();
  for (const ext of entry.extensions) {
    if (seen.has(ext.extnID)) fail(`${entry.role} ${label(entry)} has extension ${ext.extnID} more than once`);
    seen.add(ext.extnID);
  }
}

/** Decoded extension values by certificate: an intermediate's are read on every join it signs for. */
const decodedExtensions = new WeakMap<Parsed, Map<string, unknown>>();

/** The value of the extension `oid`, decoded by `read`; undefined when the certificate has none. */
function extensionValue<T>(entry: Parsed, oid: string, read: (der: Buffer) => T): T | undefined {
  let decoded = decodedExtensions.get(entry);
  if (decoded === undefined) {
    decoded = new Map();
    decodedExtensions.set(entry, decoded);
  }
  if (decoded.has(oid)) return decoded.get(oid) as T | undefined;
  const ext = entry.extensions.find((candidate) => candidate.extnID === oid);
  let value: T | undefined;
  try {
    value = ext === undefined ? undefined : read(ext.extnValue);
  } catch {
    fail(`${entry.role} ${label(entry)} has a malformed extension ${oid}`);
  }
  decoded.set(oid, value);
  return value;
}

/** `issuer` signs `intermediatesBelow` CA certificates and then the EK certificate. */
function checkIssuer(entry: Parsed, subject: Parsed, intermediatesBelow: number): void {
  const { role } = entry;
  const bc = extensionValue(entry, OID.basicConstraints, readBasicConstraints);
  if (bc === undefined || !bc.cA) {
    fail(
      `${role} ${label(entry)} is not a CA (basicConstraints ${bc === undefined ? 'missing' : 'cA=false'}) but issued ${label(subject)}`,
    );
  }
  if (bc.pathLenConstraint !== undefined && intermediatesBelow > bc.pathLenConstraint) {
    fail(
      `${role} ${label(entry)} allows ${bc.pathLenConstraint} intermediate CA(s) below it (pathLenConstraint), the path has ${intermediatesBelow}`,
    );
  }
  const ku = extensionValue(entry, OID.keyUsage, readKeyUsage);
  if (ku !== undefined && !ku.has(KEY_USAGE.keyCertSign)) {
    fail(`${role} ${label(entry)} keyUsage lacks keyCertSign but issued ${label(subject)}`);
  }
}

/** EK certificates often have no EKU; when present it must allow the EK purpose. */
function checkLeafUsage(entry: Parsed): void {
  const usages = extensionValue(entry, OID.extKeyUsage, readExtendedKeyUsage);
  if (usages === undefined) return;
  if (!usages.includes(OID.ekCertificate) && !usages.includes(OID.anyExtendedKeyUsage)) {
    fail(
      `EK certificate ${label(entry)} extendedKeyUsage [${usages.join(', ')}] lacks the EK certificate purpose ${OID.ekCertificate}`,
    );
  }
}

function tpmIdentity(entry: Parsed): EkTpmIdentity {
  const identity: EkTpmIdentity = {};
  // Decoded inside extensionValue, so a malformed name is a malformed extension.
  const attributes = extensionValue(entry, OID.subjectAltName, (der) =>
    readDirectoryNames(der).flatMap((name) =>
      readNameAttributes(name)
        .flat()
        .map(({ type, value }) => ({ type, text: attributeValueText(value) })),
    ),
  );
  for (const { type, text } of attributes ?? []) {
    if (type === OID.tpmManufacturer) identity.manufacturer = text;
    if (type === OID.tpmModel) identity.model = text;
    if (type === OID.tpmVersion) identity.version = text;
  }
  return identity;
}

/**
 * Validates an EK certificate path to one of the pinned roots (an RFC 5280 subset: signatures,
 * validity at `now` of every certificate, CA basicConstraints with pathLenConstraint, keyCertSign,
 * unknown critical extensions), tolerating the usual EK certificate quirks: an empty subject, a
 * critical subjectAltName holding only a directoryName, keyUsage keyEncipherment only, no EKU.
 * Throws AttestationError('ek-certificate') naming the certificate and the reason.
 */
export function verifyEkCertificate(options: VerifyEkCertificateOptions): Promise<VerifiedEkCertificate> {
  // Synchronous work behind a promise: a refusal is a rejection, as callers expect.
  return new Promise((resolve) => {
    resolve(verifyPath(options));
  });
}

function verifyPath(options: VerifyEkCertificateOptions): VerifiedEkCertificate {
  // Cheap refusals first: nothing is parsed or verified for them.
  if (options.roots.length === 0) fail('no pinned roots are configured for EK certificates');
  if (options.intermediates.length > MAX_EK_INTERMEDIATE_CANDIDATES) {
    fail(
      `${options.intermediates.length} intermediate certificates supplied, at most ${MAX_EK_INTERMEDIATE_CANDIDATES} allowed`,
    );
  }
  const now = options.now ?? new Date();
  const leaf = parse(options.certificate, 'EK certificate', 'EK certificate');
  const intermediates = options.intermediates.map((der, i) =>
    parse(der, 'intermediate CA certificate', `intermediate certificate ${i + 1}`),
  );
  const roots = options.roots.map((der, i) =>
    parse(der, 'pinned root certificate', `pinned root certificate ${i + 1}`),
  );

  const path = buildPath(leaf, intermediates, roots, now);
  for (const entry of path) checkValidity(entry, now);
  for (const entry of path) checkExtensionsOnce(entry);
  for (const entry of path) checkCriticalExtensions(entry);
  for (let i = 1; i < path.length; i++) checkIssuer(path[i] as Parsed, path[i - 1] as Parsed, i - 1);
  checkLeafUsage(leaf);

  return {
    subject: leaf.subject,
    issuer: leaf.issuer,
    serialNumber: leaf.serialNumber,
    notBefore: leaf.notBefore,
    notAfter: leaf.notAfter,
    spki: Buffer.from(leaf.spki), // a copy: the parsed certificate is cached
    path: path.map((entry) => entry.subject),
    tpm: tpmIdentity(leaf),
  };
}
