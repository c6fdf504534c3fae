import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OVMF } from './create-vm-machine.js';
import type { VmConfig } from './vm-config.js';

export interface KvmProbeOptions {
  /** The KVM device (default /dev/kvm). */
  device?: string;
  /** How long OVMF may take to reach its boot manager under KVM (default 30 s). */
  timeoutMs?: number;
  firmware?: { code: string; vars: string };
  qemu?: string;
}

export interface AccelChoice {
  accel: VmConfig['accel'];
  /** Why: what the probe saw (KVM's error, or OVMF reaching its boot manager). */
  reason: string;
}

/** What OVMF prints on the serial console once its boot manager runs: the firmware works. */
const BOOT_MANAGER = 'BdsDxe:';

/**
 * Whether VMs can use KVM here, found by trying: OVMF booted under KVM with no disks must reach its
 * boot manager within the bound. A /dev/kvm that exists is not enough: a nested PVM host's KVM
 * runs only kernels built for PVM (QEMU aborts setting an MSR, or OVMF dies at its first x87
 * instruction and QEMU pauses instead of exiting, which only the bound catches). Anything short
 * of the boot manager answers `tcg`, software emulation, with the reason.
 */
export async function probeKvm(options: KvmProbeOptions = {}): Promise<AccelChoice> {
  const device = options.device ?? '/dev/kvm';
  const timeoutMs = options.timeoutMs ?? 30_000;
  try {
    await access(device, constants.R_OK | constants.W_OK);
  } catch (err) {
    return { accel: 'tcg', reason: `${device} cannot be opened for reading and writing (${(err as Error).message})` };
  }
  const firmware = options.firmware ?? OVMF;
  const dir = await mkdtemp(join(tmpdir(), 'constellation-kvm-probe-'));
  try {
    const vars = join(dir, 'vars.fd');
    await copyFile(firmware.vars, vars);
    return await bootFirmware(options.qemu ?? 'qemu-system-x86_64', firmware.code, vars, timeoutMs);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function bootFirmware(qemu: string, code: string, vars: string, timeoutMs: number): Promise<AccelChoice> {
  const args = [
    '-nodefaults',
    '-no-user-config',
    '-machine',
    'q35',
    '-cpu',
    'host',
    '-accel',
    'kvm',
    '-m',
    '256',
    '-display',
    'none',
    '-serial',
    'stdio',
    '-no-reboot',
    '-drive',
    `if=pflash,format=raw,unit=0,readonly=on,file=${code}`,
    '-drive',
    `if=pflash,format=raw,unit=1,file=${vars}`,
  ];
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(qemu, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let serial = '';
    let stderr = '';
    let answer: AccelChoice | undefined;
    const settle = (choice: AccelChoice): void => {
      answer ??= choice;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => {
      settle({
        accel: 'tcg',
        reason: `OVMF did not reach its boot manager within ${timeoutMs / 1000} s under KVM${firstLine(stderr)}`,
      });
    }, timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      serial += chunk.toString('latin1');
      if (serial.includes(BOOT_MANAGER))
        settle({ accel: 'kvm', reason: `OVMF reached its boot manager under KVM in ${Date.now() - started} ms` });
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', (err) => {
      settle({ accel: 'tcg', reason: `cannot run ${qemu}: ${err.message}` });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve(
        answer ?? {
          accel: 'tcg',
          reason: `QEMU ended under KVM before OVMF's boot manager (${code === null ? `signal ${String(signal)}` : `exit ${String(code)}`})${firstLine(stderr)}`,
        },
      );
    });
  });
}

const firstLine = (text: string): string => {
  const line = text.trim().split('\n')[0]?.trim() ?? '';
  return line === '' ? '' : `: ${line}`;
};
