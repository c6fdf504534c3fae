/** Small readers for UEFI structures inside event data (little-endian, GUIDs in mixed endianness). */

/** A GUID as text: the first three fields little-endian, as UEFI stores them. */
export function guidText(bytes: Buffer, at = 0): string {
  const hex = (start: number, end: number): string => bytes.subarray(at + start, at + end).toString('hex');
  return [
    bytes.readUInt32LE(at).toString(16).padStart(8, '0'),
    bytes
      .readUInt16LE(at + 4)
      .toString(16)
      .padStart(4, '0'),
    bytes
      .readUInt16LE(at + 6)
      .toString(16)
      .padStart(4, '0'),
    hex(8, 10),
    hex(10, 16),
  ].join('-');
}

/** UTF-16LE `bytes` as text, cut at the first NUL; undefined when not printable text. */
export function utf16Text(bytes: Buffer): string | undefined {
  if (bytes.length % 2 !== 0) return undefined;
  let text = bytes.toString('utf16le');
  const nul = text.indexOf('\0');
  if (nul >= 0) {
    // Only NULs may follow the terminating one.
    if (!/^\0*$/.test(text.slice(nul))) return undefined;
    text = text.slice(0, nul);
  }
  return isPrintable(text) ? text : undefined;
}

/**
 * Event data that is a string: ASCII/UTF-8 with an optional terminating NUL, or UTF-16LE (systemd-boot,
 * firmware version strings). Undefined when the bytes are not printable text.
 */
export function eventText(bytes: Buffer): { text: string; encoding: 'utf-8' | 'utf-16le' } | undefined {
  if (bytes.length === 0) return undefined;
  // systemd-boot logs its UTF-16 string with one extra NUL byte: an odd length.
  const even = bytes.length % 2 === 1 && bytes[bytes.length - 1] === 0 ? bytes.subarray(0, bytes.length - 1) : bytes;
  if (even.length >= 4 && even.length % 2 === 0 && looksUtf16(even)) {
    const text = utf16Text(even);
    if (text !== undefined && text !== '') return { text, encoding: 'utf-16le' };
  }
  let end = bytes.length;
  while (end > 0 && bytes[end - 1] === 0) end--;
  if (end === 0) return undefined;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, end));
  } catch {
    return undefined;
  }
  return isPrintable(text) ? { text, encoding: 'utf-8' } : undefined;
}

/** Every odd byte zero and at least one even byte not: ASCII written as UTF-16LE. */
function looksUtf16(bytes: Buffer): boolean {
  let nonZero = false;
  for (let i = 0; i + 1 < bytes.length; i += 2) {
    if (bytes[i + 1] !== 0) return false;
    if (bytes[i] !== 0) nonZero = true;
  }
  return nonZero;
}

/** No control characters but tab, newline and carriage return (GRUB measures multi-line menu entries). */
function isPrintable(text: string): boolean {
  // eslint-disable-next-line no-control-regex -- control characters are what it finds
  return !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffd]/.test(text);
}

/** A u64 field as a number when it is small enough to be a length, else undefined. */
export function safeU64(bytes: Buffer, at: number): number | undefined {
  const value = bytes.readBigUInt64LE(at);
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : undefined;
}

/** A u64 field as 0x-prefixed hex (addresses). */
export function u64Hex(bytes: Buffer, at: number): string {
  return `0x${bytes.readBigUInt64LE(at).toString(16)}`;
}
