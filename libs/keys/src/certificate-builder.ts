import { randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import {
  algorithmIdentifier,
  bitString,
  boolean,
  encodeTime,
  explicit,
  implicit,
  integer,
  octetString,
  oid,
  pemBlock,
  sequence,
  set,
  signWith,
  signatureAlgorithmFor,
  smallInteger,
  utf8String,
} from '@constellation/der';
import { ipToBytes } from './ip-address.js';

/*
 * X.509 v3 certificates (RFC 5280 §4.1) written straight as DER from parts. A join signs two
 * certificates; a schema library spent most of a millisecond serialising each, this writes them
 * in microseconds. Names, keys and extensions travel as their DER bytes.
 */

/** What a certificate says; the CA's key signs it. Names, key and extensions are DER. */
export interface CertificateSpec {
  /** The issuer's Name exactly as the CA certificate's subject is encoded. */
  issuer: Buffer;
  subject: Buffer;
  subjectPublicKeyInfo: Buffer;
  notBefore: Date;
  notAfter: Date;
  /** Each a DER Extension (see `extension`). */
  extensions: readonly Buffer[];
  signingKey: KeyObject;
}

export const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

/** KeyUsage bits (RFC 5280 §4.2.1.3). */
export const KEY_USAGE = { digitalSignature: 0, keyEncipherment: 2, keyCertSign: 5, cRLSign: 6 } as const;

const ATTRIBUTE_OIDS = { CN: OID.commonName, O: OID.organization } as const;

/** A DER distinguished name from (attribute, value) pairs, one RDN each, in order (UTF8String values). */
export function distinguishedName(attributes: readonly (readonly ['CN' | 'O', string])[]): Buffer {
  return sequence(...attributes.map(([type, value]) => set(sequence(oid(ATTRIBUTE_OIDS[type]), utf8String(value)))));
}

/** A DER Extension whose extnValue is `value` (DER); criticality FALSE is omitted, as DER requires. */
export function extension(extnID: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(extnID), ...(critical ? [boolean(true)] : []), octetString(value));
}

/** The subjectAltName extension for DNS names and IP addresses, in that order; undefined for none. */
export function subjectAltNameExtension(names: {
  dnsNames: readonly string[];
  ips: readonly string[];
}): Buffer | undefined {
  const altNames = [
    ...names.dnsNames.map((name) => implicit(2, Buffer.from(name, 'latin1'))),
    ...names.ips.map((ip) => implicit(7, ipToBytes(ip))),
  ];
  if (altNames.length === 0) return undefined;
  return extension(OID.subjectAltName, false, sequence(...altNames));
}

/**
 * A random positive 128-bit serial (RFC 5280 §4.1.2.2: at most 20 octets). The top bits are 01,
 * so the DER INTEGER is minimal and positive without a leading zero (Go's parser insists).
 */
function randomSerial(): Buffer {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x3f) | 0x40;
  return bytes;
}

/** A DER X.509 v3 certificate for `spec`, signed with the issuer's key. */
export function signCertificate(spec: CertificateSpec): Buffer {
  const algorithm = signatureAlgorithmFor(spec.signingKey);
  const signatureAlgorithm = algorithmIdentifier(algorithm);
  const tbs = sequence(
    explicit(0, smallInteger(2)), // v3
    integer(randomSerial()),
    signatureAlgorithm,
    spec.issuer,
    sequence(encodeTime(spec.notBefore), encodeTime(spec.notAfter)),
    spec.subject,
    spec.subjectPublicKeyInfo,
    ...(spec.extensions.length > 0 ? [explicit(3, sequence(...spec.extensions))] : []),
  );
  return sequence(tbs, signatureAlgorithm, bitString(signWith(algorithm, tbs, spec.signingKey)));
}

/** PEM "CERTIFICATE" of a DER certificate, 64 columns, no final newline (as @peculiar/x509 writes it). */
export function certificatePem(der: Uint8Array): string {
  return pemBlock('CERTIFICATE', der);
}
