import { randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import type { SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import {
  AttributeTypeAndValue,
  AttributeValue,
  Extension,
  Extensions,
  GeneralName,
  Name,
  RelativeDistinguishedName,
  SubjectAlternativeName,
  TBSCertificate,
  Validity,
  Version,
  id_ce_subjectAltName,
} from '@peculiar/asn1-x509';
import { signWith, signatureAlgorithmFor } from './signature-algorithms.js';

/** What a certificate says; the CA's key signs it. */
export interface CertificateSpec {
  issuer: Name;
  subject: Name;
  subjectPublicKeyInfo: SubjectPublicKeyInfo;
  notBefore: Date;
  notAfter: Date;
  extensions: readonly Extension[];
  signingKey: KeyObject;
}

const ATTRIBUTE_OIDS = { CN: '2.5.4.3', O: '2.5.4.10' } as const;

/** A distinguished name from (attribute, value) pairs, one RDN each, in order (UTF8String values). */
export function distinguishedName(attributes: readonly (readonly ['CN' | 'O', string])[]): Name {
  return new Name(
    attributes.map(
      ([type, value]) =>
        new RelativeDistinguishedName([
          new AttributeTypeAndValue({ type: ATTRIBUTE_OIDS[type], value: new AttributeValue({ utf8String: value }) }),
        ]),
    ),
  );
}

/** An extension whose value is the DER of `value` (an @peculiar/asn1-x509 extension type). */
export function extension(extnID: string, critical: boolean, value: unknown): Extension {
  return new Extension({ extnID, critical, extnValue: new OctetString(AsnConvert.serialize(value)) });
}

/** The subjectAltName extension for DNS names and IP addresses, in that order; undefined for none. */
export function subjectAltNameExtension(names: {
  dnsNames: readonly string[];
  ips: readonly string[];
}): Extension | undefined {
  const altNames = [
    ...names.dnsNames.map((dNSName) => new GeneralName({ dNSName })),
    ...names.ips.map((iPAddress) => new GeneralName({ iPAddress })),
  ];
  if (altNames.length === 0) return undefined;
  return extension(id_ce_subjectAltName, false, new SubjectAlternativeName(altNames));
}

/**
 * A random positive 128-bit serial (RFC 5280 §4.1.2.2: at most 20 octets). The top bits are 01,
 * so the DER INTEGER is minimal and positive without a leading zero (Go's parser insists).
 */
function randomSerial(): ArrayBuffer {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x3f) | 0x40;
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
}

/** A DER X.509 v3 certificate for `spec`, signed with the issuer's key. */
export function signCertificate(spec: CertificateSpec): Buffer {
  const signature = signatureAlgorithmFor(spec.signingKey);
  const tbsCertificate = new TBSCertificate({
    version: Version.v3,
    serialNumber: randomSerial(),
    signature,
    issuer: spec.issuer,
    validity: new Validity({ notBefore: spec.notBefore, notAfter: spec.notAfter }),
    subject: spec.subject,
    subjectPublicKeyInfo: spec.subjectPublicKeyInfo,
    ...(spec.extensions.length > 0 ? { extensions: new Extensions([...spec.extensions]) } : {}),
  });
  const tbs = Buffer.from(AsnConvert.serialize(tbsCertificate));
  const signed = signWith(signature, tbs, spec.signingKey);
  // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue BIT STRING }:
  // joined from parts, so the TBS is not encoded a second time.
  const algorithm = Buffer.from(AsnConvert.serialize(signature));
  const bitString = Buffer.concat([Buffer.from([0x03]), derLength(signed.length + 1), Buffer.from([0]), signed]);
  const body = Buffer.concat([tbs, algorithm, bitString]);
  return Buffer.concat([Buffer.from([0x30]), derLength(body.length), body]);
}

/** A DER length: short form below 128, else the long form's big-endian bytes. */
function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** PEM "CERTIFICATE" of a DER certificate, 64 columns, no final newline (as @peculiar/x509 writes it). */
export function certificatePem(der: Uint8Array): string {
  const lines =
    Buffer.from(der)
      .toString('base64')
      .match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----`;
}
