import { guidText, utf16Text } from './uefi-text.js';

/** Most nodes a device path may have before it is refused as hostile. */
const MAX_NODES = 64;

/** Why a device path could not be read. */
export class DevicePathError extends Error {
  override readonly name = 'DevicePathError';
}

const ACPI_PNP_PCI_ROOT = 0x0a0341d0;
const ACPI_PNP_PCIE_ROOT = 0x0a0841d0;

/**
 * A UEFI device path (EFI_DEVICE_PATH_PROTOCOL nodes) as the text UEFI's own shell prints:
 * `PciRoot(0x0)/Pci(0x1f,0x2)/Sata(0x0,0xffff,0x0)/HD(1,GPT,<guid>,0x800,0x100000)/\EFI\BOOT\BOOTX64.EFI`.
 * Nodes this reader does not know appear as `Path(type,subtype,<hex>)`. Throws DevicePathError
 * for a malformed path.
 */
export function devicePathText(bytes: Buffer): string {
  const instances: string[][] = [[]];
  let at = 0;
  for (let count = 0; ; count++) {
    if (count >= MAX_NODES) throw new DevicePathError(`more than ${MAX_NODES} nodes`);
    if (bytes.length - at < 4) throw new DevicePathError(`truncated node header at byte ${at}`);
    const type = bytes[at] ?? 0;
    const subtype = bytes[at + 1] ?? 0;
    const length = bytes.readUInt16LE(at + 2);
    if (length < 4 || length > bytes.length - at) {
      throw new DevicePathError(`node at byte ${at} claims ${length} bytes, ${bytes.length - at} left`);
    }
    const data = bytes.subarray(at + 4, at + length);
    at += length;
    if (type === 0x7f) {
      if (subtype === 0xff) break;
      instances.push([]);
      continue;
    }
    instances[instances.length - 1]?.push(nodeText(type, subtype, data));
  }
  if (at !== bytes.length) throw new DevicePathError(`${bytes.length - at} bytes after the end node`);
  return instances.map((nodes) => nodes.join('/')).join(',');
}

const hex = (n: number | bigint): string => `0x${n.toString(16)}`;

function nodeText(type: number, subtype: number, data: Buffer): string {
  const known = knownNodeText(type, subtype, data);
  return known ?? `Path(${type},${subtype},${data.toString('hex')})`;
}

function knownNodeText(type: number, subtype: number, d: Buffer): string | undefined {
  switch (`${type}/${subtype}`) {
    case '1/1': // hardware: PCI
      return d.length === 2 ? `Pci(${hex(d[1] ?? 0)},${hex(d[0] ?? 0)})` : undefined;
    case '1/4': // hardware: vendor
      return d.length >= 16 ? `VenHw(${guidText(d)})` : undefined;
    case '2/1': {
      // ACPI: _HID and _UID
      if (d.length !== 8) return undefined;
      const hid = d.readUInt32LE(0);
      const uid = d.readUInt32LE(4);
      if (hid === ACPI_PNP_PCI_ROOT) return `PciRoot(${hex(uid)})`;
      if (hid === ACPI_PNP_PCIE_ROOT) return `PcieRoot(${hex(uid)})`;
      return `Acpi(${eisaId(hid)},${hex(uid)})`;
    }
    case '3/1': // messaging: ATAPI
      return d.length === 4
        ? `Ata(${d[0] === 0 ? 'Primary' : 'Secondary'},${d[1] === 0 ? 'Master' : 'Slave'},${hex(d.readUInt16LE(2))})`
        : undefined;
    case '3/2': // messaging: SCSI
      return d.length === 4 ? `Scsi(${hex(d.readUInt16LE(0))},${hex(d.readUInt16LE(2))})` : undefined;
    case '3/5': // messaging: USB
      return d.length === 2 ? `USB(${hex(d[0] ?? 0)},${hex(d[1] ?? 0)})` : undefined;
    case '3/11': // messaging: MAC address (32 bytes, then the interface type)
      return d.length === 33 ? `MAC(${d.subarray(0, 6).toString('hex')},${hex(d[32] ?? 0)})` : undefined;
    case '3/18': // messaging: SATA
      return d.length === 6
        ? `Sata(${hex(d.readUInt16LE(0))},${hex(d.readUInt16LE(2))},${hex(d.readUInt16LE(4))})`
        : undefined;
    case '3/23': // messaging: NVMe namespace
      return d.length === 12
        ? `NVMe(${hex(d.readUInt32LE(0))},${[...d.subarray(4, 12)].map((b) => b.toString(16).padStart(2, '0')).join('-')})`
        : undefined;
    case '3/24': // messaging: URI
      return `Uri(${d.toString('latin1')})`;
    case '4/1': {
      // media: hard drive partition
      if (d.length !== 38) return undefined;
      const partition = d.readUInt32LE(0);
      const start = d.readBigUInt64LE(4);
      const size = d.readBigUInt64LE(12);
      const format = d[36];
      const signatureType = d[37];
      const signature =
        signatureType === 2
          ? `GPT,${guidText(d, 20)}`
          : signatureType === 1
            ? `MBR,${hex(d.readUInt32LE(20))}`
            : `${signatureType ?? 0},0`;
      return format === 1 || format === 2 ? `HD(${partition},${signature},${hex(start)},${hex(size)})` : undefined;
    }
    case '4/2': // media: CD-ROM
      return d.length === 20
        ? `CDROM(${hex(d.readUInt32LE(0))},${hex(d.readBigUInt64LE(4))},${hex(d.readBigUInt64LE(12))})`
        : undefined;
    case '4/3': // media: vendor
      return d.length >= 16 ? `VenMedia(${guidText(d)})` : undefined;
    case '4/4': // media: file path
      return utf16Text(d);
    case '4/6': // media: PIWG firmware file
      return d.length === 16 ? `FvFile(${guidText(d)})` : undefined;
    case '4/7': // media: PIWG firmware volume
      return d.length === 16 ? `Fv(${guidText(d)})` : undefined;
    case '4/8': // media: relative offset range
      return d.length === 20 ? `Offset(${hex(d.readBigUInt64LE(4))},${hex(d.readBigUInt64LE(12))})` : undefined;
    default:
      return undefined;
  }
}

/** A compressed EISA ID ("PNP0A03") from an ACPI _HID. */
function eisaId(hid: number): string {
  const vendor = hid & 0xffff;
  const letters = [10, 5, 0].map((shift) => String.fromCharCode(((vendor >> shift) & 0x1f) + 0x40)).join('');
  const product = ((hid >>> 16) & 0xffff).toString(16).padStart(4, '0').toUpperCase();
  return `${letters}${product}`;
}
