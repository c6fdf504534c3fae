import { createPublicKey, randomBytes, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import {
  bitString,
  boolean,
  children,
  decodeOid,
  explicit,
  generalizedTime,
  integer,
  octetString,
  oid,
  pemBlock,
  readTlv,
  sequence,
  set,
  utf8String,
} from '@constellation/der';
import { DerError } from '@constellation/der';

const ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';
const COMMON_NAME = '2.5.4.3';
const BASIC_CONSTRAINTS = '2.5.29.19';
const KEY_USAGE = '2.5.29.15';

export interface CertificateExtension {
  oid: string;
  critical: boolean;
  value: Buffer;
}

export interface CertificateSpec {
  /** Public key the certificate is for. */
  subjectKey: KeyObject;
  subjectName: string;
  /** ECDSA P-256 private key that signs (the subject's own key for a self-signed certificate). */
  signerKey: KeyObject;
  issuerName: string;
  isCa?: boolean;
  extensions?: readonly CertificateExtension[];
}

/*
 * Validity carries no meaning for aTLS certificates: freshness comes from the nonce inside the
 * attestation. A fixed wide window means clock skew between CLI and node can never break a
 * handshake.
 */
const NOT_BEFORE = new Date('2000-01-01T00:00:00Z');
const NOT_AFTER = new Date('9999-12-31T23:59:59Z');

const name = (cn: string): Buffer => sequence(set(sequence(oid(COMMON_NAME), utf8String(cn))));

/** Builds and signs an X.509 v3 certificate (ECDSA with SHA-256), returned as DER. */
export function createCertificate(spec: CertificateSpec): Buffer {
  const extensions: CertificateExtension[] = [...(spec.extensions ?? [])];
  if (spec.isCa === true) {
    extensions.push({ oid: BASIC_CONSTRAINTS, critical: true, value: sequence(boolean(true)) });
    // keyCertSign and cRLSign: BIT STRING 0x06 with one unused bit.
    extensions.push({ oid: KEY_USAGE, critical: true, value: Buffer.from([0x03, 0x02, 0x01, 0x06]) });
  }
  const signatureAlgorithm = sequence(oid(ECDSA_WITH_SHA256));
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const tbs = sequence(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    signatureAlgorithm,
    name(spec.issuerName),
    sequence(generalizedTime(NOT_BEFORE), generalizedTime(NOT_AFTER)),
    name(spec.subjectName),
    spec.subjectKey.export({ type: 'spki', format: 'der' }),
    ...(extensions.length > 0
      ? [
          explicit(
            3,
            sequence(
              ...extensions.map((ext) =>
                sequence(oid(ext.oid), ...(ext.critical ? [boolean(true)] : []), octetString(ext.value)),
              ),
            ),
          ),
        ]
      : []),
  );
  const signature = sign('sha256', tbs, spec.signerKey);
  return sequence(tbs, signatureAlgorithm, bitString(signature));
}

/** PEM form of a DER certificate. */
export function certificateToPem(der: Buffer): string {
  return `${pemBlock('CERTIFICATE', der)}\n`;
}

export interface CertificateFields {
  /** The SubjectPublicKeyInfo exactly as encoded in the certificate. */
  spki: Buffer;
  extensions: CertificateExtension[];
}

/**
 * Reads the subject public key info and the extensions straight from the DER, without a full
 * X.509 parser: this is on every aTLS handshake, and byte-exact SPKI is what the attestation binds.
 */
export function readCertificateFields(der: Buffer): CertificateFields {
  const certificate = readTlv(der);
  if (certificate.tag !== 0x30 || certificate.end !== der.length)
    throw new DerError('certificate is not one DER SEQUENCE');
  const tbs = children(certificate.content)[0];
  if (tbs?.tag !== 0x30) throw new DerError('certificate has no TBSCertificate');
  const fields = children(tbs.content);
  const offset = fields[0]?.tag === 0xa0 ? 1 : 0;
  const spki = fields[offset + 5];
  if (spki?.tag !== 0x30) throw new DerError('certificate has no SubjectPublicKeyInfo');
  createPublicKey({ key: spki.raw, format: 'der', type: 'spki' }); // must be a usable key
  const extensions: CertificateExtension[] = [];
  const wrapped = fields.slice(offset + 6).find((field) => field.tag === 0xa3);
  const list = wrapped === undefined ? undefined : children(wrapped.content)[0];
  for (const ext of list === undefined ? [] : children(list.content)) {
    const parts = children(ext.content);
    const id = parts[0];
    if (id?.tag !== 0x06) throw new DerError('extension without OID');
    const hasCritical = parts[1]?.tag === 0x01;
    const value = parts[hasCritical ? 2 : 1];
    if (value?.tag !== 0x04) throw new DerError('extension without value');
    extensions.push({
      oid: decodeOid(id.content),
      critical: hasCritical && parts[1]?.content[0] !== 0,
      value: value.content,
    });
  }
  return { spki: Buffer.from(spki.raw), extensions };
}
