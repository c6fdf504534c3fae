import { DerError, DerFields, TAG, children, decodeOid } from './der-reader.js';
import type { Tlv } from './der-reader.js';

/** One attribute of a distinguished name: its type and its value, undecoded. */
export interface NameAttribute {
  /** The attribute type's OID, dotted. */
  type: string;
  value: Tlv;
}

/** GeneralName CHOICE alternatives by their context tag (RFC 5280 §4.2.1.6). */
const GENERAL_NAME_KINDS: Readonly<Record<number, string>> = {
  0xa0: 'otherName',
  0x81: 'email',
  0x82: 'dns',
  0xa3: 'x400Address',
  0xa4: 'directoryName',
  0xa5: 'ediPartyName',
  0x86: 'url',
  0x87: 'ip',
  0x88: 'registeredID',
};

/** Which GeneralName alternative a tag is (dns, ip, email, url, directoryName...); undefined for none. */
export function generalNameKind(tag: number): string | undefined {
  return GENERAL_NAME_KINDS[tag];
}

const TELETEX_STRING = 0x14;
const UNIVERSAL_STRING = 0x1c;
const BMP_STRING = 0x1e;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A Name (RFC 5280 §4.1.2.4: SEQUENCE OF RelativeDistinguishedName, each a SET OF
 * AttributeTypeAndValue) as its RDNs' attributes, in encoding order.
 */
export function readNameAttributes(name: Tlv): NameAttribute[][] {
  if (name.tag !== TAG.sequence) throw new DerError('name is not a SEQUENCE');
  return children(name.content).map((rdn) => {
    if (rdn.tag !== TAG.set) throw new DerError('name: a relative distinguished name is not a SET');
    return children(rdn.content).map((attribute) => {
      const parts = DerFields.of(attribute, TAG.sequence, 'name attribute');
      const type = decodeOid(parts.next(TAG.oid, 'type').content);
      const value = parts.any('value');
      parts.end();
      return { type, value };
    });
  });
}

/**
 * Text of a directory string (X.520: UTF8String, PrintableString, TeletexString, BMPString,
 * UniversalString) or an IA5String; undefined for a value of any other type (RFC 4514 §2.4 writes
 * those as '#' and their DER in hex). TeletexString is read as Latin-1, as most software reads it.
 */
export function directoryStringText(value: Tlv): string | undefined {
  switch (value.tag) {
    case TAG.utf8String:
      try {
        return utf8.decode(value.content);
      } catch {
        throw new DerError('UTF8String is not valid UTF-8');
      }
    case TAG.printableString:
    case TAG.ia5String:
    case TELETEX_STRING:
      return value.content.toString('latin1');
    case BMP_STRING:
      if (value.content.length % 2 !== 0) throw new DerError('BMPString has an odd number of octets');
      return Buffer.from(value.content).swap16().toString('utf16le');
    case UNIVERSAL_STRING:
      return universalStringText(value.content);
    default:
      return undefined;
  }
}

/**
 * An attribute value as text: a directory string's text, any other value '#' and its DER in hex
 * (RFC 4514 §2.4, before escaping).
 */
export function attributeValueText(value: Tlv): string {
  return directoryStringText(value) ?? `#${value.raw.toString('hex')}`;
}

/** UniversalString: UCS-4, big-endian. */
function universalStringText(content: Buffer): string {
  if (content.length % 4 !== 0) throw new DerError('UniversalString length is not a multiple of 4');
  const codePoints: number[] = [];
  for (let i = 0; i < content.length; i += 4) {
    const codePoint = content.readUInt32BE(i);
    if (codePoint > 0x10ffff) throw new DerError('UniversalString holds a value that is not a code point');
    codePoints.push(codePoint);
  }
  return String.fromCodePoint(...codePoints);
}
