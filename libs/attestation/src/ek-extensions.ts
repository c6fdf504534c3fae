import {
  DerError,
  DerFields,
  TAG,
  children,
  decodeBoolean,
  decodeNamedBits,
  decodeOid,
  decodeSmallNonNegativeInteger,
  generalNameKind,
  readOnly,
} from '@constellation/der';
import type { Tlv } from '@constellation/der';

// The extension values the EK certificate path reads (RFC 5280 §4.2.1), decoded from their DER
// with libs/der's walker. Each reader refuses trailing bytes and a field with the wrong tag.

/** basicConstraints (§4.2.1.9). */
export interface BasicConstraints {
  cA: boolean;
  pathLenConstraint?: number;
}

/** keyUsage bit numbers (§4.2.1.3). */
export const KEY_USAGE = { keyCertSign: 5 } as const;

/** SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLenConstraint INTEGER (0..MAX) OPTIONAL }. */
export function readBasicConstraints(der: Buffer): BasicConstraints {
  const fields = new DerFields(readOnly(der, TAG.sequence, 'basicConstraints').content, 'basicConstraints');
  // An encoded cA FALSE (not DER) is read as FALSE, as OpenSSL and Go read it.
  const cA = fields.optional(TAG.boolean);
  const pathLength = fields.optional(TAG.integer);
  fields.end();
  const constraints: BasicConstraints = { cA: cA !== undefined && decodeBoolean(cA) };
  if (pathLength !== undefined) {
    constraints.pathLenConstraint = decodeSmallNonNegativeInteger(pathLength, 'pathLenConstraint');
  }
  return constraints;
}

/** The keyUsage bits that are set (see KEY_USAGE). */
export function readKeyUsage(der: Buffer): Set<number> {
  return decodeNamedBits(readOnly(der, TAG.bitString, 'keyUsage'), 'keyUsage');
}

/** extKeyUsage: SEQUENCE OF KeyPurposeId, as dotted OIDs. */
export function readExtendedKeyUsage(der: Buffer): string[] {
  return children(readOnly(der, TAG.sequence, 'extKeyUsage').content).map((purpose) => {
    if (purpose.tag !== TAG.oid) throw new DerError('extKeyUsage: a purpose is not an OBJECT IDENTIFIER');
    return decodeOid(purpose.content);
  });
}

/**
 * The directoryName entries of a subjectAltName (GeneralNames, §4.2.1.6), each a Name; the
 * other alternatives are checked for a GeneralName tag and skipped.
 */
export function readDirectoryNames(der: Buffer): Tlv[] {
  const names: Tlv[] = [];
  for (const name of children(readOnly(der, TAG.sequence, 'subjectAltName').content)) {
    const kind = generalNameKind(name.tag);
    if (kind === undefined) throw new DerError(`subjectAltName: tag 0x${name.tag.toString(16)} is not a GeneralName`);
    // directoryName is an EXPLICIT tag (the Name is a CHOICE): one Name inside.
    if (kind === 'directoryName') names.push(readOnly(name.content, TAG.sequence, 'directoryName'));
  }
  return names;
}
