import { describe, expect, it } from 'vitest';
import { vmBootProgress } from './boot-phase.js';

const KERNEL = '[    0.000000] Linux version 6.1.0-56-cloud-amd64 (debian-kernel@lists.debian.org)';
const INITRD = 'constellation-initrd: started (5.91 s)';
const SYSTEMD = '[   13.109371] systemd[1]: systemd 252.39-1~deb12u2 running in system mode (+PAM)';
const STARTED =
  '[\u001b[0;32m  OK  \u001b[0m] Started \u001b[0;1;39mconstellation-boot…- Constellation node bootstrapper.';

describe('a VM boot phase from its serial console', () => {
  it('is the firmware before the kernel prints anything', () => {
    expect(vmBootProgress('')).toEqual({ phase: 'firmware' });
    expect(vmBootProgress('BdsDxe: loading Boot0001 "UEFI Misc Device"\n')).toEqual({ phase: 'firmware' });
  });

  it('follows the kernel, the initrd, systemd and the bootstrapper, colours and all', () => {
    expect(vmBootProgress(`${KERNEL}\n`).phase).toBe('kernel');
    expect(vmBootProgress(`${KERNEL}\n${INITRD}\n`).phase).toBe('initrd');
    expect(vmBootProgress(`${KERNEL}\n${INITRD}\n${SYSTEMD}\n`).phase).toBe('systemd');
    expect(vmBootProgress(`${KERNEL}\n${INITRD}\n${SYSTEMD}\n${STARTED}\r\n`).phase).toBe('bootstrapper');
  });

  it('does not go back when an earlier marker shows up again (a kernel line after systemd)', () => {
    expect(vmBootProgress(`${SYSTEMD}\n${KERNEL}\n`).phase).toBe('systemd');
  });

  it("says why from the initrd's error line", () => {
    const serial = `${KERNEL}\n${INITRD}\nconstellation-initrd: error: dm-verity: root hash mismatch: abc\nconstellation-initrd: powering off\n`;
    expect(vmBootProgress(serial)).toEqual({ phase: 'failed', error: 'dm-verity: root hash mismatch: abc' });
  });
});
