// DER (X.690 §10) writing from parts: each function returns the complete encoding of one value,
// so a structure is written as nested calls that read like its ASN.1 definition.

/** Encodes one TLV with a definite, minimal length. */
export function tlv(tag: number, content: Uint8Array): Buffer {
  const length = content.length;
  let header: Buffer;
  if (length < 0x80) header = Buffer.from([tag, length]);
  else if (length <= 0xff) header = Buffer.from([tag, 0x81, length]);
  else if (length <= 0xffff) header = Buffer.from([tag, 0x82, length >> 8, length & 0xff]);
  else if (length <= 0xffffff) header = Buffer.from([tag, 0x83, length >> 16, (length >> 8) & 0xff, length & 0xff]);
  else throw new RangeError(`DER value of ${length} bytes is larger than this writer supports`);
  return Buffer.concat([header, content]);
}

export const sequence = (...items: Uint8Array[]): Buffer => tlv(0x30, Buffer.concat(items));
export const set = (...items: Uint8Array[]): Buffer => tlv(0x31, Buffer.concat(items));
export const octetString = (value: Uint8Array): Buffer => tlv(0x04, value);
export const utf8String = (value: string): Buffer => tlv(0x0c, Buffer.from(value, 'utf8'));
export const ia5String = (value: string): Buffer => tlv(0x16, Buffer.from(value, 'latin1'));
export const bitString = (value: Uint8Array): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), value]));
export const boolean = (value: boolean): Buffer => tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
export const nullValue = (): Buffer => Buffer.from([0x05, 0x00]);
/** Context-specific constructed tag [n] EXPLICIT (or IMPLICIT over a constructed type). */
export const explicit = (n: number, content: Uint8Array): Buffer => tlv(0xa0 | n, content);
/** Context-specific primitive tag [n] IMPLICIT: the content of a primitive type under tag n. */
export const implicit = (n: number, content: Uint8Array): Buffer => tlv(0x80 | n, content);

/** A non-negative INTEGER from big-endian magnitude bytes. */
export function integer(magnitude: Uint8Array): Buffer {
  let bytes = Buffer.from(magnitude);
  while (bytes.length > 1 && bytes[0] === 0 && (bytes[1] ?? 0) < 0x80) bytes = bytes.subarray(1);
  if ((bytes[0] ?? 0) >= 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return tlv(0x02, bytes.length === 0 ? Buffer.from([0]) : bytes);
}

/** A small non-negative INTEGER (a version number). */
export function smallInteger(value: number): Buffer {
  if (!Number.isInteger(value) || value < 0 || value > 0x7fffffff)
    throw new RangeError(`integer ${value} out of range`);
  const bytes: number[] = [];
  for (let rest = value; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return integer(Buffer.from(bytes));
}

/** An OBJECT IDENTIFIER from dotted notation. */
export function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map((arc) => {
    if (!/^\d+$/.test(arc)) throw new RangeError(`invalid OID ${dotted}`);
    return Number(arc);
  });
  const [first, second, ...rest] = arcs;
  if (first === undefined || second === undefined || first > 2 || (first < 2 && second > 39)) {
    throw new RangeError(`invalid OID ${dotted}`);
  }
  const bytes: number[] = [];
  for (const arc of [first * 40 + second, ...rest]) {
    const chunk: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/**
 * A BIT STRING of named bits (bit 0 is the most significant bit of the first octet), with the
 * trailing zero bits removed as DER requires for named bit lists (X.690 §11.2.2).
 */
export function namedBits(bits: readonly number[]): Buffer {
  if (bits.length === 0) return tlv(0x03, Buffer.from([0]));
  const highest = Math.max(...bits);
  const octets = Buffer.alloc(Math.floor(highest / 8) + 1);
  for (const bit of bits) octets[bit >> 3] = (octets[bit >> 3] ?? 0) | (0x80 >> (bit & 7));
  const unused = 7 - (highest & 7);
  return tlv(0x03, Buffer.concat([Buffer.from([unused]), octets]));
}

/** GeneralizedTime (YYYYMMDDHHMMSSZ), valid for any year. */
export function generalizedTime(date: Date): Buffer {
  const text = date
    .toISOString()
    .replace(/[-:T]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
  return tlv(0x18, Buffer.from(text, 'ascii'));
}
