// The PE/COFF header fields objcopy fills from the clock: the COFF TimeDateStamp and the optional
// header's CheckSum over the whole file. Setting the first to a fixed time and recomputing the
// second makes the UKI's bytes depend on its contents only.

/** Where the COFF header's TimeDateStamp and the optional header's CheckSum are. */
function offsets(image: Buffer): { timestamp: number; checksum: number } {
  if (image.toString('latin1', 0, 2) !== 'MZ') throw new Error('not a PE image (no MZ header)');
  const pe = image.readUInt32LE(0x3c);
  if (image.toString('latin1', pe, pe + 4) !== 'PE\0\0') throw new Error('not a PE image (no PE signature)');
  // Signature (4), Machine (2), NumberOfSections (2), then TimeDateStamp; the optional header starts
  // after the 20-byte COFF header, and its CheckSum is at offset 64 in PE32 and PE32+ alike.
  return { timestamp: pe + 8, checksum: pe + 4 + 20 + 64 };
}

/** The PE checksum (as ImageHlp's CheckSumMappedFile): 16-bit one's-complement-style sum, plus the length. */
export function peChecksum(image: Buffer): number {
  const { checksum } = offsets(image);
  let sum = 0;
  for (let i = 0; i < image.length; i += 2) {
    if (i === checksum || i === checksum + 2) continue;
    sum += i + 1 < image.length ? image.readUInt16LE(i) : (image[i] ?? 0);
    sum = (sum & 0xffff) + (sum >>> 16);
  }
  sum = (sum & 0xffff) + (sum >>> 16);
  return (sum + image.length) >>> 0;
}

/** Sets the image's TimeDateStamp to `epoch` and its CheckSum to match (in place). */
export function setPeTimestamp(image: Buffer, epoch: number): void {
  const { timestamp, checksum } = offsets(image);
  image.writeUInt32LE(epoch >>> 0, timestamp);
  image.writeUInt32LE(peChecksum(image), checksum);
}
