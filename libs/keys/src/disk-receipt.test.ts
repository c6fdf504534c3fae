import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deriveDiskReceipt, isDiskReceipt } from './disk-receipt.js';

const master = randomBytes(32);
const salt = randomBytes(32);
const disk = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
const machine = 'a'.repeat(64);

describe('disk receipts', () => {
  it('are 32 bytes, the same for the same disk (in any case) and machine', () => {
    const receipt = deriveDiskReceipt(master, salt, disk, machine);
    expect(receipt).toHaveLength(32);
    expect(deriveDiskReceipt(master, salt, disk.toUpperCase(), machine)).toEqual(receipt);
    expect(isDiskReceipt(receipt, master, salt, disk, machine)).toBe(true);
  });

  it('fit nothing else: another disk, another machine, another cluster, a cut or empty receipt', () => {
    const receipt = deriveDiskReceipt(master, salt, disk, machine);
    expect(isDiskReceipt(receipt, master, salt, '1b4e28ba-2fa1-11d2-883f-0016d3cca428', machine)).toBe(false);
    expect(isDiskReceipt(receipt, master, salt, disk, 'b'.repeat(64))).toBe(false);
    expect(isDiskReceipt(receipt, randomBytes(32), salt, disk, machine)).toBe(false);
    expect(isDiskReceipt(receipt.subarray(0, 16), master, salt, disk, machine)).toBe(false);
    expect(isDiskReceipt(Buffer.alloc(0), master, salt, disk, machine)).toBe(false);
  });

  it('cannot be made for another pair by moving the separator between disk and machine', () => {
    // "<uuid>@<machine>" names one pair only while the UUID cannot hold an "@".
    expect(() => deriveDiskReceipt(master, salt, `${disk}@x`, 'y')).toThrow(/is not a disk UUID/);
    expect(() => deriveDiskReceipt(master, salt, disk, '')).toThrow(RangeError);
  });
});
