// Strict DER (X.690 §10) reading: definite, minimal lengths and single-octet tags only, which is
// all X.509 and PKCS#10 use. A walker over the bytes: no objects per node, so reading a
// certificate costs microseconds, not the milliseconds a schema parser spends.

/** One decoded TLV: its tag, its content and its complete encoding (views into the input). */
export interface Tlv {
  tag: number;
  content: Buffer;
  raw: Buffer;
}

/** Bytes that are not the DER this reader expects; the message says where and what. */
export class DerError extends Error {
  override readonly name = 'DerError';
}

export const TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  null: 0x05,
  oid: 0x06,
  utf8String: 0x0c,
  printableString: 0x13,
  ia5String: 0x16,
  utcTime: 0x17,
  generalizedTime: 0x18,
  sequence: 0x30,
  set: 0x31,
} as const;

const hex = (tag: number): string => `0x${tag.toString(16).padStart(2, '0')}`;

/** Reads the TLV at `offset`; refuses high tag numbers, indefinite, over-long and non-minimal lengths. */
export function readTlv(buf: Buffer, offset = 0): Tlv & { end: number } {
  if (offset + 2 > buf.length) throw new DerError('truncated DER header');
  const tag = buf[offset] ?? 0;
  if ((tag & 0x1f) === 0x1f) throw new DerError(`unsupported DER high tag number (${hex(tag)})`);
  const first = buf[offset + 1] ?? 0;
  let length = first;
  let headerLength = 2;
  if (first & 0x80) {
    const count = first & 0x7f;
    if (count === 0 || count > 3) throw new DerError(`unsupported DER length encoding (${hex(first)})`);
    if (offset + 2 + count > buf.length) throw new DerError('truncated DER length');
    if (buf[offset + 2] === 0) throw new DerError('DER length has a leading zero octet (not minimal)');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + (buf[offset + 2 + i] ?? 0);
    if (length < 0x80) throw new DerError('DER length in long form fits the short form (not minimal)');
    headerLength += count;
  }
  const end = offset + headerLength + length;
  if (end > buf.length) throw new DerError('DER value runs past the end of its container');
  return { tag, content: buf.subarray(offset + headerLength, end), raw: buf.subarray(offset, end), end };
}

/** The one TLV that `der` consists of, with tag `tag`; trailing bytes are refused. */
export function readOnly(der: Buffer, tag: number, what: string): Tlv {
  const item = readTlv(der);
  if (item.tag !== tag) throw new DerError(`${what}: expected tag ${hex(tag)}, found ${hex(item.tag)}`);
  if (item.end !== der.length) throw new DerError(`${what} is followed by ${der.length - item.end} bytes`);
  return item;
}

/** All TLVs directly inside `content`. */
export function children(content: Buffer): Tlv[] {
  const out: Tlv[] = [];
  for (let offset = 0; offset < content.length;) {
    const item = readTlv(content, offset);
    out.push(item);
    offset = item.end;
  }
  return out;
}

/**
 * Reads the fields of one constructed value in order, as its ASN.1 definition lists them:
 * `next` for a required field, `optional` for one that may be absent, `end` when all are read.
 */
export class DerFields {
  private offset = 0;

  constructor(
    private readonly content: Buffer,
    private readonly what: string,
  ) {}

  /** The fields inside `item`, which must carry `tag` (a SEQUENCE, usually). */
  static of(item: Tlv, tag: number, what: string): DerFields {
    if (item.tag !== tag) throw new DerError(`${what} should have tag ${hex(tag)}, has ${hex(item.tag)}`);
    return new DerFields(item.content, what);
  }

  /** The next field; it must be there and carry `tag`. */
  next(tag: number, field: string): Tlv {
    if (this.offset >= this.content.length) throw new DerError(`${this.what}: ${field} is missing`);
    const item = readTlv(this.content, this.offset);
    if (item.tag !== tag) {
      throw new DerError(`${this.what}: ${field} should have tag ${hex(tag)}, has ${hex(item.tag)}`);
    }
    this.offset = item.end;
    return item;
  }

  /** The next field, whatever its tag (an ASN.1 ANY). */
  any(field: string): Tlv {
    if (this.offset >= this.content.length) throw new DerError(`${this.what}: ${field} is missing`);
    const item = readTlv(this.content, this.offset);
    this.offset = item.end;
    return item;
  }

  /** The next field if it carries `tag`; otherwise undefined and nothing is consumed. */
  optional(tag: number): Tlv | undefined {
    if (this.offset >= this.content.length || this.content[this.offset] !== tag) return undefined;
    const item = readTlv(this.content, this.offset);
    this.offset = item.end;
    return item;
  }

  /** Every field is read: bytes after the last one are refused. */
  end(): void {
    if (this.offset !== this.content.length) {
      throw new DerError(`${this.what} has ${this.content.length - this.offset} bytes after its last field`);
    }
  }
}

/** Dotted notation of an OBJECT IDENTIFIER's content bytes; refuses padded and truncated arcs. */
export function decodeOid(content: Buffer): string {
  if (content.length === 0) throw new DerError('empty OID');
  const arcs: number[] = [];
  let value = 0;
  let start = true;
  for (const byte of content) {
    if (start && byte === 0x80) throw new DerError('OID arc has a leading 0x80 octet (not minimal)');
    value = value * 128 + (byte & 0x7f);
    start = (byte & 0x80) === 0;
    if (start) {
      arcs.push(value);
      value = 0;
    }
  }
  if (!start) throw new DerError('OID ends inside an arc');
  const [head, ...rest] = arcs;
  if (head === undefined) throw new DerError('malformed OID');
  const first = head < 80 ? Math.floor(head / 40) : 2;
  return [first, head - first * 40, ...rest].join('.');
}

/** A DER BOOLEAN's value: one octet, 0x00 or 0xff (X.690 §11.1). */
export function decodeBoolean(item: Tlv): boolean {
  if (item.tag !== TAG.boolean || item.content.length !== 1) throw new DerError('malformed BOOLEAN');
  const [value] = item.content;
  if (value === 0x00) return false;
  if (value === 0xff) return true;
  throw new DerError('BOOLEAN is neither 0x00 nor 0xff (not DER)');
}

/** A BIT STRING's bits as bytes; only whole octets (no unused bits) are accepted. */
export function decodeOctetAlignedBits(item: Tlv, what: string): Buffer {
  if (item.tag !== TAG.bitString || item.content.length === 0 || item.content[0] !== 0) {
    throw new DerError(`${what} is not a BIT STRING of whole octets`);
  }
  return item.content.subarray(1);
}

/**
 * The positions of the bits set in a BIT STRING of named bits (bit 0 is the first octet's most
 * significant bit), such as keyUsage. The unused bits must be zero, as X.690 §11.2.1 requires.
 */
export function decodeNamedBits(item: Tlv, what: string): Set<number> {
  const [unused, ...octets] = item.content;
  if (item.tag !== TAG.bitString || unused === undefined || unused > 7 || (octets.length === 0 && unused !== 0)) {
    throw new DerError(`${what} is not a well-formed BIT STRING`);
  }
  if (((octets[octets.length - 1] ?? 0) & ((1 << unused) - 1)) !== 0) {
    throw new DerError(`${what} has unused bits that are not zero`);
  }
  const set = new Set<number>();
  octets.forEach((octet, index) => {
    for (let bit = 0; bit < 8; bit++) if (octet & (0x80 >> bit)) set.add(index * 8 + bit);
  });
  return set;
}

/** A non-negative INTEGER that fits a number (a count such as pathLenConstraint), minimally encoded. */
export function decodeSmallNonNegativeInteger(item: Tlv, what: string): number {
  const { content } = item;
  if (item.tag !== TAG.integer || content.length === 0) throw new DerError(`${what} is not an INTEGER`);
  if (content.length > 1 && content[0] === 0 && ((content[1] ?? 0) & 0x80) === 0) {
    throw new DerError(`${what} has a leading zero octet (not minimal)`);
  }
  if (((content[0] ?? 0) & 0x80) !== 0) throw new DerError(`${what} is negative`);
  if (content.length > 5 || (content.length === 5 && content[0] !== 0)) throw new DerError(`${what} is too large`);
  return content.reduce((value, octet) => value * 256 + octet, 0);
}

/** One X.509 extension (RFC 5280 §4.1), its value undecoded. */
export interface DerExtension {
  extnID: string;
  critical: boolean;
  /** The extnValue OCTET STRING's content: the extension's own DER. */
  extnValue: Buffer;
  /** critical FALSE was encoded, which DER forbids (a default value is omitted). */
  explicitFalse: boolean;
}

/** Reads an Extension ::= SEQUENCE { extnID, critical BOOLEAN DEFAULT FALSE, extnValue }. */
export function readExtension(item: Tlv): DerExtension {
  const fields = DerFields.of(item, TAG.sequence, 'extension');
  const extnID = decodeOid(fields.next(TAG.oid, 'extnID').content);
  const critical = fields.optional(TAG.boolean);
  const extnValue = fields.next(TAG.octetString, 'extnValue').content;
  fields.end();
  const flag = critical === undefined ? false : decodeBoolean(critical);
  return { extnID, critical: flag, extnValue, explicitFalse: critical !== undefined && !flag };
}
