/** Event data in the formats the readers decode: for crafted logs and for our own measurements. */

/** GUID text to the 16 bytes UEFI stores (first three fields little-endian). */
export function guidBytes(guid: string): Buffer {
  const match = /^([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})$/i.exec(guid);
  if (match === null) throw new RangeError(`not a GUID: ${guid}`);
  const out = Buffer.alloc(16);
  out.writeUInt32LE(Number.parseInt(match[1] ?? '', 16), 0);
  out.writeUInt16LE(Number.parseInt(match[2] ?? '', 16), 4);
  out.writeUInt16LE(Number.parseInt(match[3] ?? '', 16), 6);
  Buffer.from(`${match[4] ?? ''}${match[5] ?? ''}`, 'hex').copy(out, 8);
  return out;
}

/** UEFI_VARIABLE_DATA for a variable `name` of vendor `guid` holding `value`. */
export function uefiVariableData(guid: string, name: string, value: Uint8Array): Buffer {
  const header = Buffer.alloc(32);
  guidBytes(guid).copy(header, 0);
  header.writeBigUInt64LE(BigInt(name.length), 16);
  header.writeBigUInt64LE(BigInt(value.length), 24);
  return Buffer.concat([header, Buffer.from(name, 'utf16le'), value]);
}

/** A device path of one media file-path node (`\EFI\BOOT\BOOTX64.EFI`) and the end node. */
export function filePathDevicePath(path: string): Buffer {
  const name = Buffer.from(`${path}\0`, 'utf16le');
  const node = Buffer.alloc(4);
  node.writeUInt8(4, 0);
  node.writeUInt8(4, 1);
  node.writeUInt16LE(4 + name.length, 2);
  return Buffer.concat([node, name, Buffer.from([0x7f, 0xff, 0x04, 0x00])]);
}

/** UEFI_IMAGE_LOAD_EVENT for an image loaded at `location` with `devicePath`. */
export function imageLoadEventData(image: { location?: bigint; length: number; devicePath?: Buffer }): Buffer {
  const path = image.devicePath ?? Buffer.alloc(0);
  const header = Buffer.alloc(32);
  header.writeBigUInt64LE(image.location ?? 0n, 0);
  header.writeBigUInt64LE(BigInt(image.length), 8);
  header.writeBigUInt64LE(0n, 16);
  header.writeBigUInt64LE(BigInt(path.length), 24);
  return Buffer.concat([header, path]);
}

/** An EV_SEPARATOR's data: 00000000, or ffffffff for an error separator. */
export function separatorData(error = false): Buffer {
  return Buffer.alloc(4, error ? 0xff : 0);
}

/** A NUL-terminated string, as GRUB measures its commands and EFI actions are logged. */
export function cString(text: string): Buffer {
  return Buffer.from(`${text}\0`, 'utf8');
}
