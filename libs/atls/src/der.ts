// Minimal DER (X.690) encoding and decoding: enough for the certificates aTLS makes and reads.

/** Encodes one TLV with a definite length. */
export function tlv(tag: number, content: Uint8Array): Buffer {
  const length = content.length;
  let header: Buffer;
  if (length < 0x80) header = Buffer.from([tag, length]);
  else if (length <= 0xff) header = Buffer.from([tag, 0x81, length]);
  else if (length <= 0xffff) header = Buffer.from([tag, 0x82, length >> 8, length & 0xff]);
  else header = Buffer.from([tag, 0x83, length >> 16, (length >> 8) & 0xff, length & 0xff]);
  return Buffer.concat([header, content]);
}

export const sequence = (...items: Uint8Array[]): Buffer => tlv(0x30, Buffer.concat(items));
export const set = (...items: Uint8Array[]): Buffer => tlv(0x31, Buffer.concat(items));
export const octetString = (value: Uint8Array): Buffer => tlv(0x04, value);
export const utf8String = (value: string): Buffer => tlv(0x0c, Buffer.from(value, 'utf8'));
export const bitString = (value: Uint8Array): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), value]));
export const boolean = (value: boolean): Buffer => tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
/** Context-specific constructed tag [n] EXPLICIT. */
export const explicit = (n: number, content: Uint8Array): Buffer => tlv(0xa0 | n, content);

/** A non-negative INTEGER from big-endian magnitude bytes. */
export function integer(magnitude: Uint8Array): Buffer {
  let bytes = Buffer.from(magnitude);
  while (bytes.length > 1 && bytes[0] === 0 && (bytes[1] ?? 0) < 0x80) bytes = bytes.subarray(1);
  if ((bytes[0] ?? 0) >= 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return tlv(0x02, bytes.length === 0 ? Buffer.from([0]) : bytes);
}

/** An OBJECT IDENTIFIER from dotted notation. */
export function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map((arc) => {
    if (!/^\d+$/.test(arc)) throw new RangeError(`invalid OID ${dotted}`);
    return Number(arc);
  });
  const [first, second, ...rest] = arcs;
  if (first === undefined || second === undefined) throw new RangeError(`invalid OID ${dotted}`);
  const bytes: number[] = [];
  for (const arc of [first * 40 + second, ...rest]) {
    const chunk: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** GeneralizedTime (YYYYMMDDHHMMSSZ), valid for any year. */
export function generalizedTime(date: Date): Buffer {
  const text = date
    .toISOString()
    .replace(/[-:T]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
  return tlv(0x18, Buffer.from(text, 'ascii'));
}

/** One decoded TLV: its tag, its content and its complete encoding. */
export interface Tlv {
  tag: number;
  content: Buffer;
  raw: Buffer;
}

export class DerError extends Error {
  override readonly name = 'DerError';
}

/** Reads the TLV at `offset`; rejects indefinite and over-long lengths. */
export function readTlv(buf: Buffer, offset = 0): Tlv & { end: number } {
  if (offset + 2 > buf.length) throw new DerError('truncated DER header');
  const tag = buf[offset] ?? 0;
  const first = buf[offset + 1] ?? 0;
  let length = first;
  let headerLength = 2;
  if (first & 0x80) {
    const count = first & 0x7f;
    if (count === 0 || count > 3) throw new DerError(`unsupported DER length encoding (0x${first.toString(16)})`);
    if (offset + 2 + count > buf.length) throw new DerError('truncated DER length');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + (buf[offset + 2 + i] ?? 0);
    headerLength += count;
  }
  const end = offset + headerLength + length;
  if (end > buf.length) throw new DerError('DER value runs past the end of its container');
  return { tag, content: buf.subarray(offset + headerLength, end), raw: buf.subarray(offset, end), end };
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

/** Dotted notation of an OBJECT IDENTIFIER's content bytes. */
export function decodeOid(content: Buffer): string {
  if (content.length === 0) throw new DerError('empty OID');
  const arcs: number[] = [];
  let value = 0;
  for (const byte of content) {
    value = value * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) {
      arcs.push(value);
      value = 0;
    }
  }
  const [head, ...rest] = arcs;
  if (head === undefined) throw new DerError('malformed OID');
  const first = head < 80 ? Math.floor(head / 40) : 2;
  return [first, head - first * 40, ...rest].join('.');
}
