import { closeSync, openSync, readSync } from 'node:fs';

const PRIMARY_MAGIC = Buffer.from('LUKS\xba\xbe', 'latin1');
const SECONDARY_MAGIC = Buffer.from('SKUL\xba\xbe', 'latin1');
/**
 * Where cryptsetup looks for a LUKS2 secondary header when the primary one is damaged
 * (LUKS2_HDR2_OFFSETS in cryptsetup's lib/luks2/luks2.h).
 */
const SECONDARY_OFFSETS = [0x4000, 0x8000, 0x10000, 0x20000, 0x40000, 0x80000, 0x100000, 0x200000, 0x400000];

/**
 * Whether `device` carries no LUKS magic at all: neither the primary header's at offset 0 nor a
 * secondary header's at any offset cryptsetup scans. `true` means cryptsetup could not find a
 * header either, so a first boot can skip spawning `cryptsetup isLuks`; `false` (a magic is there,
 * or the device could not be read) leaves the verdict to cryptsetup. Checking the secondary
 * offsets matters: a disk whose primary header is damaged is still recoverable, and must never be
 * taken for blank and formatted.
 */
export function lacksLuksMagic(device: string): boolean {
  let fd: number;
  try {
    fd = openSync(device, 'r');
  } catch {
    return false;
  }
  try {
    const magic = Buffer.alloc(PRIMARY_MAGIC.length);
    for (const [offset, expected] of [
      [0, PRIMARY_MAGIC] as const,
      ...SECONDARY_OFFSETS.map((o) => [o, SECONDARY_MAGIC] as const),
    ]) {
      if (readSync(fd, magic, 0, magic.length, offset) === magic.length && magic.equals(expected)) return false;
    }
    return true;
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}
