import { describe, expect, it } from 'vitest';
import { DevicePathError, devicePathText } from './device-path.js';
import { filePathDevicePath } from './event-data-builders.js';

const node = (type: number, subtype: number, data: string) => {
  const bytes = Buffer.from(data, 'hex');
  const header = Buffer.from([type, subtype, 0, 0]);
  header.writeUInt16LE(4 + bytes.length, 2);
  return Buffer.concat([header, bytes]);
};
const END = node(0x7f, 0xff, '');

describe('UEFI device paths as text', () => {
  it('prints the nodes boot applications are loaded from', () => {
    // The workstation's systemd-boot, as its firmware logged it.
    const path = Buffer.from(
      '02010c00d041030a0000000001010600001703120a000100ffff000004012a0001000000000800000000000000000800000000001346501ab519444ba83dd926d40daa1c0202040446005c004500460049005c00530059005300540045004d0044005c00530059005300540045004d0044002d0042004f004f0054005800360034002e0045004600490000007fff0400',
      'hex',
    );
    expect(devicePathText(path)).toBe(
      'PciRoot(0x0)/Pci(0x17,0x0)/Sata(0x1,0xffff,0x0)/HD(1,GPT,1a504613-19b5-4b44-a83d-d926d40daa1c,0x800,0x80000)/\\EFI\\SYSTEMD\\SYSTEMD-BOOTX64.EFI',
    );
    expect(devicePathText(filePathDevicePath('\\EFI\\BOOT\\BOOTX64.EFI'))).toBe('\\EFI\\BOOT\\BOOTX64.EFI');
    expect(devicePathText(Buffer.concat([node(2, 1, 'd041050100000000'), node(9, 9, 'abcd'), END]))).toBe(
      'Acpi(PNP0105,0x0)/Path(9,9,abcd)',
    );
  });

  it('refuses malformed paths with the reason, within bounds', () => {
    expect(() => devicePathText(Buffer.from('0401', 'hex'))).toThrow(
      new DevicePathError('truncated node header at byte 0'),
    );
    expect(() => devicePathText(Buffer.from('04010200', 'hex'))).toThrow('node at byte 0 claims 2 bytes, 4 left');
    expect(() => devicePathText(Buffer.from('0401ff00', 'hex'))).toThrow('node at byte 0 claims 255 bytes, 4 left');
    expect(() => devicePathText(Buffer.concat([END, Buffer.alloc(2)]))).toThrow('2 bytes after the end node');
    expect(() =>
      devicePathText(Buffer.concat([...Array.from({ length: 100 }, () => node(1, 1, '0000')), END])),
    ).toThrow('more than 64 nodes');
    expect(() => devicePathText(node(1, 1, '0000'))).toThrow('truncated node header at byte 6');
  });
});
