import { TpmParseError } from './errors.js';

/** Builds big-endian TPM wire structures. */
export class TpmWriter {
  private readonly chunks: Buffer[] = [];
  private length = 0;

  u8(value: number): this {
    return this.push(Buffer.from([value & 0xff]));
  }
  u16(value: number): this {
    const b = Buffer.alloc(2);
    b.writeUInt16BE(value);
    return this.push(b);
  }
  u32(value: number): this {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(value >>> 0);
    return this.push(b);
  }
  u64(value: bigint): this {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(value);
    return this.push(b);
  }
  bytes(value: Uint8Array): this {
    return this.push(Buffer.from(value));
  }
  /** A TPM2B: 16-bit size followed by the bytes. */
  sized(value: Uint8Array): this {
    if (value.length > 0xffff) throw new RangeError(`TPM2B of ${value.length} bytes exceeds 65535`);
    return this.u16(value.length).bytes(value);
  }
  toBuffer(): Buffer {
    return Buffer.concat(this.chunks, this.length);
  }

  private push(b: Buffer): this {
    this.chunks.push(b);
    this.length += b.length;
    return this;
  }
}

/**
 * Reads big-endian TPM wire structures with bounds checks. Every read past the end throws
 * TpmParseError naming the field, so malformed input never yields partial garbage.
 */
export class TpmReader {
  private offset = 0;
  private readonly buf: Buffer;
  private readonly what: string;

  constructor(buf: Uint8Array, what: string) {
    this.buf = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
    this.what = what;
  }

  get remaining(): number {
    return this.buf.length - this.offset;
  }

  u8(field: string): number {
    return this.take(1, field).readUInt8(0);
  }
  u16(field: string): number {
    return this.take(2, field).readUInt16BE(0);
  }
  u32(field: string): number {
    return this.take(4, field).readUInt32BE(0);
  }
  u64(field: string): bigint {
    return this.take(8, field).readBigUInt64BE(0);
  }
  bytes(length: number, field: string): Buffer {
    return Buffer.from(this.take(length, field));
  }
  /** A TPM2B, optionally with an upper bound on its size. */
  sized(field: string, max = 0xffff): Buffer {
    const size = this.u16(`${field}.size`);
    if (size > max) throw new TpmParseError(`${this.what}: ${field} has size ${size}, at most ${max} allowed`);
    return this.bytes(size, field);
  }
  /** Throws unless every byte has been consumed; trailing data means a malformed structure. */
  end(): void {
    if (this.remaining !== 0) {
      throw new TpmParseError(`${this.what}: ${this.remaining} unexpected trailing bytes`);
    }
  }

  private take(length: number, field: string): Buffer {
    if (length > this.remaining) {
      throw new TpmParseError(`${this.what}: truncated at ${field} (needs ${length} bytes, ${this.remaining} left)`);
    }
    const out = this.buf.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }
}
