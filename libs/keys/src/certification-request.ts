import { createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { CertificationRequest, CertificationRequestInfo } from '@peculiar/asn1-csr';
import { AsnConvert, AsnParser } from '@peculiar/asn1-schema';
import { Attribute, Extensions, SubjectAlternativeName, SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import type { Name, GeneralName } from '@peculiar/asn1-x509';
import { subjectAltNameExtension } from './certificate-builder.js';
import { signWith, signatureAlgorithmFor, signatureKeyType, verifySignature } from './signature-algorithms.js';

/** PKCS#9 extensionRequest: the extensions a PKCS#10 request asks for (RFC 2985 §5.4.2). */
const EXTENSION_REQUEST = '1.2.840.113549.1.9.14';
const SUBJECT_ALT_NAME = '2.5.29.17';
const ATTRIBUTE_NAMES: Readonly<Record<string, string>> = { '2.5.4.3': 'CN', '2.5.4.10': 'O', '2.5.4.11': 'OU' };

/** A subjectAltName entry: dns, ip, or another kind by its ASN.1 CHOICE name. */
export interface SubjectAltName {
  type: string;
  value: string;
}

/** A PKCS#10 request whose signature verified with its own key (proof of possession). */
export interface VerifiedCertificationRequest {
  /** Subject attribute values by short name (CN, O, OU), in order; others by OID. */
  subject: ReadonlyMap<string, readonly string[]>;
  subjectPublicKeyInfo: SubjectPublicKeyInfo;
  publicKey: KeyObject;
  subjectAltNames: readonly SubjectAltName[];
}

/** Why a request was not accepted as well-formed and signed. */
export class CertificationRequestError extends Error {
  override readonly name = 'CertificationRequestError';
}

function subjectFields(name: Name): Map<string, string[]> {
  const fields = new Map<string, string[]>();
  for (const rdn of name) {
    for (const attribute of rdn) {
      const key = ATTRIBUTE_NAMES[attribute.type] ?? attribute.type;
      fields.set(key, [...(fields.get(key) ?? []), attribute.value.toString()]);
    }
  }
  return fields;
}

function altName(name: GeneralName): SubjectAltName {
  if (name.dNSName !== undefined) return { type: 'dns', value: name.dNSName };
  if (name.iPAddress !== undefined) return { type: 'ip', value: name.iPAddress };
  if (name.rfc822Name !== undefined) return { type: 'email', value: name.rfc822Name };
  if (name.uniformResourceIdentifier !== undefined) return { type: 'url', value: name.uniformResourceIdentifier };
  const [kind] = Object.keys(name).filter((key) => (name as unknown as Record<string, unknown>)[key] !== undefined);
  return { type: kind ?? 'unknown', value: '' };
}

function requestedAltNames(info: CertificationRequestInfo): SubjectAltName[] {
  const names: SubjectAltName[] = [];
  for (const attribute of info.attributes) {
    if (attribute.type !== EXTENSION_REQUEST) continue;
    for (const value of attribute.values) {
      for (const ext of AsnParser.parse(value, Extensions)) {
        if (ext.extnID !== SUBJECT_ALT_NAME) continue;
        for (const name of AsnParser.parse(ext.extnValue, SubjectAlternativeName)) names.push(altName(name));
      }
    }
  }
  return names;
}

/**
 * The outer SEQUENCE's header must be DER (definite, minimal length) and its end the input's end.
 * The parser reads past neither and ignores what follows; Go's ParseCertificateRequest refuses
 * trailing data, and so does this CA, so a request has one encoding at this level.
 */
function checkEnvelope(der: Uint8Array): void {
  const notDer = (): never => {
    throw new CertificationRequestError('certificate request is not a DER PKCS#10 request');
  };
  if (der.length < 2 || der[0] !== 0x30) notDer();
  const first = der[1] ?? 0;
  let length = first;
  let header = 2;
  if (first & 0x80) {
    const octets = first & 0x7f;
    if (octets === 0 || octets > 3 || der.length < 2 + octets || der[2] === 0) notDer(); // indefinite, huge, padded
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + (der[2 + i] ?? 0);
    if (length < 0x80) notDer(); // the short form fits: the long one is not DER
    header = 2 + octets;
  }
  const end = header + length;
  if (end > der.length) notDer();
  if (end < der.length) {
    throw new CertificationRequestError(
      `certificate request is followed by ${der.length - end} bytes that are not part of it`,
    );
  }
}

/**
 * Parses a DER PKCS#10 request and verifies its signature with the key it carries, over the
 * request info's bytes exactly as received.
 */
export function parseCertificationRequest(der: Uint8Array): VerifiedCertificationRequest {
  checkEnvelope(der);
  let request: CertificationRequest;
  let subjectAltNames: SubjectAltName[];
  let publicKey: KeyObject;
  try {
    request = AsnParser.parse(der, CertificationRequest);
    subjectAltNames = requestedAltNames(request.certificationRequestInfo);
  } catch {
    throw new CertificationRequestError('certificate request is not a DER PKCS#10 request');
  }
  const info = request.certificationRequestInfo;
  try {
    publicKey = createPublicKey({
      key: Buffer.from(AsnConvert.serialize(info.subjectPKInfo)),
      format: 'der',
      type: 'spki',
    });
  } catch {
    throw new CertificationRequestError('certificate request carries a public key this CA cannot read');
  }
  let keyType: string;
  try {
    keyType = signatureKeyType(request.signatureAlgorithm);
  } catch (err) {
    throw new CertificationRequestError(
      `certificate request signature does not verify (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  if (publicKey.asymmetricKeyType !== keyType) {
    throw new CertificationRequestError(
      `certificate request signature algorithm ${request.signatureAlgorithm.algorithm} is for ${keyType} keys, the request's key is ${publicKey.asymmetricKeyType ?? 'unknown'}`,
    );
  }
  let signed: boolean;
  try {
    signed = verifySignature(
      request.signatureAlgorithm,
      new Uint8Array(request.certificationRequestInfoRaw ?? AsnConvert.serialize(info)),
      publicKey,
      new Uint8Array(request.signature),
    );
  } catch (err) {
    throw new CertificationRequestError(
      `certificate request signature does not verify (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  if (!signed) throw new CertificationRequestError('certificate request signature does not verify');
  return { subject: subjectFields(info.subject), subjectPublicKeyInfo: info.subjectPKInfo, publicKey, subjectAltNames };
}

/** A DER PKCS#10 request for `subject` and `key`, asking for DNS and IP subjectAltNames. */
export function createCertificationRequest(
  subject: Name,
  key: { publicKey: KeyObject; privateKey: KeyObject },
  names: { dnsNames: readonly string[]; ips: readonly string[] },
): Buffer {
  const altNames = subjectAltNameExtension(names);
  const attributes =
    altNames === undefined
      ? []
      : [new Attribute({ type: EXTENSION_REQUEST, values: [AsnConvert.serialize(new Extensions([altNames]))] })];
  const info = new CertificationRequestInfo({
    subject,
    subjectPKInfo: AsnParser.parse(key.publicKey.export({ type: 'spki', format: 'der' }), SubjectPublicKeyInfo),
  });
  info.attributes.push(...attributes);
  const signatureAlgorithm = signatureAlgorithmFor(key.privateKey);
  const signature = signWith(signatureAlgorithm, new Uint8Array(AsnConvert.serialize(info)), key.privateKey);
  const request = new CertificationRequest({
    certificationRequestInfo: info,
    signatureAlgorithm,
    signature: new Uint8Array(signature).buffer,
  });
  return Buffer.from(AsnConvert.serialize(request));
}
