import { DerFields, TAG, decodeOctetAlignedBits, readOnly } from '@constellation/der';

/** The subjectPublicKey bits of a DER SubjectPublicKeyInfo (for an EC key: its point). */
export function publicKeyBits(spki: Buffer): Buffer {
  const fields = new DerFields(readOnly(spki, TAG.sequence, 'subjectPublicKeyInfo').content, 'subjectPublicKeyInfo');
  fields.next(TAG.sequence, 'algorithm');
  const bits = decodeOctetAlignedBits(fields.next(TAG.bitString, 'subjectPublicKey'), 'subjectPublicKey');
  fields.end();
  return bits;
}
