import { createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import {
  DerError,
  DerFields,
  TAG,
  algorithmIdentifier,
  attributeValueText,
  bitString,
  children,
  decodeOctetAlignedBits,
  decodeOid,
  explicit,
  generalNameKind,
  oid,
  readCanonicalSpki,
  readExtension,
  readNameAttributes,
  readOnly,
  sequence,
  set,
  signWith,
  signatureAlgorithmFor,
  signatureKeyType,
  smallInteger,
  spkiKeyJwk,
  verifySignature,
} from '@constellation/der';
import type { Tlv } from '@constellation/der';
import { OID, subjectAltNameExtension } from './certificate-builder.js';
import { ipFromBytes } from './ip-address.js';

/*
 * PKCS#10 certification requests (RFC 2986), read and written as DER with a walker: a join reads
 * two, and a schema parser spent over a millisecond on each. Every field is checked for the tag
 * its definition gives; the signature is verified over the request info's bytes as received.
 */

/** PKCS#9 extensionRequest: the extensions a PKCS#10 request asks for (RFC 2985 §5.4.2). */
const EXTENSION_REQUEST = '1.2.840.113549.1.9.14';
const ATTRIBUTE_NAMES: Readonly<Record<string, string>> = { '2.5.4.3': 'CN', '2.5.4.10': 'O', '2.5.4.11': 'OU' };
/** A subjectAltName entry: dns, ip, email, url, or another kind by its GeneralName alternative. */
export interface SubjectAltName {
  type: string;
  value: string;
}

/** A PKCS#10 request whose signature verified with its own key (proof of possession). */
export interface VerifiedCertificationRequest {
  /** Subject attribute values by short name (CN, O, OU), in order; others by OID. */
  subject: ReadonlyMap<string, readonly string[]>;
  /**
   * The key's SubjectPublicKeyInfo (DER) as OpenSSL writes it for the key it read, not the bytes
   * received: a certificate carries one canonical encoding (a named curve, never explicit
   * parameters), whatever else would have parsed.
   */
  subjectPublicKeyInfo: Buffer;
  publicKey: KeyObject;
  subjectAltNames: readonly SubjectAltName[];
}

/** Why a request was not accepted as well-formed and signed. */
export class CertificationRequestError extends Error {
  override readonly name = 'CertificationRequestError';
}

function subjectFields(name: Tlv): Map<string, string[]> {
  const fields = new Map<string, string[]>();
  for (const { type, value } of readNameAttributes(name).flat()) {
    const key = ATTRIBUTE_NAMES[type] ?? type;
    fields.set(key, [...(fields.get(key) ?? []), attributeValueText(value)]);
  }
  return fields;
}

function altName(name: Tlv): SubjectAltName {
  const type = generalNameKind(name.tag) ?? `[${String(name.tag & 0x1f)}]`;
  if (type === 'ip') return { type, value: ipFromBytes(name.content) };
  if (type === 'dns' || type === 'email' || type === 'url') return { type, value: name.content.toString('latin1') };
  return { type, value: '' };
}

/** The subjectAltNames asked for in extensionRequest attributes. */
function requestedAltNames(attributes: Tlv | undefined): SubjectAltName[] {
  const names: SubjectAltName[] = [];
  if (attributes === undefined) return names;
  for (const attribute of children(attributes.content)) {
    const parts = DerFields.of(attribute, TAG.sequence, 'attribute');
    const type = decodeOid(parts.next(TAG.oid, 'type').content);
    const values = parts.next(TAG.set, 'values');
    parts.end();
    if (type !== EXTENSION_REQUEST) continue;
    for (const extensions of children(values.content)) {
      if (extensions.tag !== TAG.sequence) throw new DerError('extensionRequest: Extensions is not a SEQUENCE');
      for (const item of children(extensions.content)) {
        const { extnID, extnValue, explicitFalse } = readExtension(item);
        if (explicitFalse) throw new DerError('extension: critical FALSE is encoded (DER omits a default value)');
        if (extnID !== OID.subjectAltName) continue;
        for (const name of children(readOnly(extnValue, TAG.sequence, 'subjectAltName').content)) {
          names.push(altName(name));
        }
      }
    }
  }
  return names;
}

/**
 * The request's key, and its SPKI in the one encoding OpenSSL writes for it. A canonical SPKI
 * (almost every request) is read directly and imported as a JWK, a fraction of OpenSSL's DER
 * import and export; any other form goes through OpenSSL and is written anew.
 */
function requestKey(spki: Buffer): { publicKey: KeyObject; subjectPublicKeyInfo: Buffer } {
  const canonical = readCanonicalSpki(spki);
  if (canonical !== undefined) {
    return {
      publicKey: createPublicKey({ key: spkiKeyJwk(canonical), format: 'jwk' }),
      subjectPublicKeyInfo: Buffer.from(spki),
    };
  }
  const publicKey = createPublicKey({ key: spki, format: 'der', type: 'spki' });
  return { publicKey, subjectPublicKeyInfo: publicKey.export({ type: 'spki', format: 'der' }) };
}

interface RequestParts {
  info: Tlv;
  subject: Tlv;
  spki: Tlv;
  attributes: Tlv | undefined;
  signatureAlgorithm: string;
  signature: Buffer;
}

/** The request's fields, each checked for the tag RFC 2986 §4 gives it. */
function requestParts(der: Buffer): RequestParts {
  const outer = new DerFields(readOnly(der, TAG.sequence, 'certificate request').content, 'certificate request');
  const info = outer.next(TAG.sequence, 'certificationRequestInfo');
  const algorithm = new DerFields(outer.next(TAG.sequence, 'signatureAlgorithm').content, 'signatureAlgorithm');
  const signature = decodeOctetAlignedBits(outer.next(TAG.bitString, 'signature'), 'signature');
  outer.end();
  const signatureAlgorithm = decodeOid(algorithm.next(TAG.oid, 'algorithm').content);
  const fields = new DerFields(info.content, 'certificationRequestInfo');
  const version = fields.next(TAG.integer, 'version');
  if (!version.content.equals(Buffer.from([0]))) throw new DerError('certificationRequestInfo: version is not 0 (v1)');
  const subject = fields.next(TAG.sequence, 'subject');
  const spki = fields.next(TAG.sequence, 'subjectPKInfo');
  const attributes = fields.optional(0xa0);
  fields.end();
  return { info, subject, spki, attributes, signatureAlgorithm, signature };
}

/**
 * Parses a DER PKCS#10 request and verifies its signature with the key it carries, over the
 * request info's bytes exactly as received. Trailing bytes are refused, as Go's
 * ParseCertificateRequest does, so a request has one encoding at the outer level.
 */
export function parseCertificationRequest(input: Uint8Array): VerifiedCertificationRequest {
  const der = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  let parts: RequestParts;
  let subject: Map<string, string[]>;
  let subjectAltNames: SubjectAltName[];
  try {
    parts = requestParts(der);
    subject = subjectFields(parts.subject);
    subjectAltNames = requestedAltNames(parts.attributes);
  } catch (err) {
    const trailing = err instanceof DerError && /^certificate request is followed by (\d+) bytes$/.exec(err.message);
    if (trailing) {
      throw new CertificationRequestError(
        `certificate request is followed by ${trailing[1] ?? ''} bytes that are not part of it`,
      );
    }
    const detail = err instanceof Error ? `: ${err.message}` : '';
    throw new CertificationRequestError(`certificate request is not a DER PKCS#10 request${detail}`);
  }
  let publicKey: KeyObject;
  let subjectPublicKeyInfo: Buffer;
  try {
    ({ publicKey, subjectPublicKeyInfo } = requestKey(parts.spki.raw));
  } catch {
    throw new CertificationRequestError('certificate request carries a public key this CA cannot read');
  }
  let keyType: string;
  try {
    keyType = signatureKeyType(parts.signatureAlgorithm);
  } catch (err) {
    throw new CertificationRequestError(
      `certificate request signature does not verify (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  if (publicKey.asymmetricKeyType !== keyType) {
    throw new CertificationRequestError(
      `certificate request signature algorithm ${parts.signatureAlgorithm} is for ${keyType} keys, the request's key is ${publicKey.asymmetricKeyType ?? 'unknown'}`,
    );
  }
  if (!verifySignature(parts.signatureAlgorithm, parts.info.raw, publicKey, parts.signature)) {
    throw new CertificationRequestError('certificate request signature does not verify');
  }
  return {
    subject,
    subjectPublicKeyInfo,
    publicKey,
    subjectAltNames,
  };
}

/** A DER PKCS#10 request for `subject` (a DER Name) and `key`, asking for DNS and IP subjectAltNames. */
export function createCertificationRequest(
  subject: Buffer,
  key: { publicKey: KeyObject; privateKey: KeyObject },
  names: { dnsNames: readonly string[]; ips: readonly string[] },
): Buffer {
  const altNames = subjectAltNameExtension(names);
  const attributes = altNames === undefined ? [] : [sequence(oid(EXTENSION_REQUEST), set(sequence(altNames)))];
  const info = sequence(
    smallInteger(0),
    subject,
    key.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(0, Buffer.concat(attributes)),
  );
  const algorithm = signatureAlgorithmFor(key.privateKey);
  return sequence(info, algorithmIdentifier(algorithm), bitString(signWith(algorithm, info, key.privateKey)));
}
