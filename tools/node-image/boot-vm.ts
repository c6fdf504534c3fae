// Boots a VM with QEMU, OVMF and a TPM (swtpm), its serial console into a file, and stops it again:
// when the serial log says what the caller waits for, when the guest powers off, or at a timeout.
// Every process it starts is stopped before it returns. Software emulation (TCG) by default:
// /dev/kvm on these machines is PVM and cannot run OVMF (see issue 49).
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { setTimeout as sleep } from 'node:timers/promises';

/** Debian's OVMF (package ovmf): the 4 MiB build, no Secure Boot keys enrolled. */
export const DEBIAN_OVMF = { code: '/usr/share/OVMF/OVMF_CODE_4M.fd', vars: '/usr/share/OVMF/OVMF_VARS_4M.fd' };

export interface VmDisk {
  file: string;
  readOnly: boolean;
  format?: 'raw' | 'qcow2';
  /** The disk's serial number; the guest sees it as /dev/disk/by-id/virtio-<serial>. */
  serial?: string;
}

export interface BootVmOptions {
  /** virtio disks in PCI order; the first (the ESP) is the one OVMF boots (bootindex 0). */
  disks: readonly VmDisk[];
  /** Where the serial console goes (created anew). */
  serialLog: string;
  /** The control socket of an swtpm to use; without it, a fresh swtpm (state in a temporary directory). */
  tpmSocket?: string;
  memoryMiB?: number;
  cpus?: number;
  accel?: 'tcg' | 'kvm';
  /** OVMF's code and the variable store this boot starts from (copied: the original is never written). */
  ovmf?: { code: string; vars: string };
  /**
   * 'isolated': a virtio NIC on QEMU's user network with restrict=on (DHCP from QEMU, nothing
   * reaches outside the VM). 'none': no NIC.
   */
  network?: 'none' | 'isolated';
  /** Stop the VM once the serial log so far satisfies this (checked as it grows). */
  until?: (serial: string) => boolean;
  /** The longest the VM may run; then it is killed. */
  timeoutMs: number;
}

export interface SerialLine {
  /** Milliseconds after QEMU started when the line was complete in the log (polled every 100 ms). */
  atMs: number;
  text: string;
}

export interface BootVmResult {
  /** 'until': the caller's condition held; 'exited': QEMU ended by itself (guest power-off, panic); 'timeout'. */
  outcome: 'until' | 'exited' | 'timeout';
  /** QEMU's exit code when it ended by itself (1 after a guest kernel panic: pvpanic). */
  exitCode: number | null;
  durationMs: number;
  serial: string;
  lines: SerialLine[];
  /** QEMU's own messages (stderr), the last 8000 characters. */
  qemuMessages: string;
}

/** QEMU's command line for one boot (also useful to print). */
export function qemuArguments(options: BootVmOptions, vars: string, tpmSocket: string): string[] {
  const accel = options.accel ?? 'tcg';
  const ovmf = options.ovmf ?? DEBIAN_OVMF;
  const args = [
    '-nodefaults',
    '-no-user-config',
    '-machine',
    'q35',
    '-cpu',
    accel === 'kvm' ? 'host' : 'max',
    // The default translation cache adds about 1 GiB of host memory under TCG.
    '-accel',
    accel === 'kvm' ? 'kvm' : 'tcg,tb-size=256',
    '-m',
    String(options.memoryMiB ?? 1024),
    '-smp',
    String(options.cpus ?? 1),
    '-display',
    'none',
    '-serial',
    `file:${options.serialLog}`,
    '-drive',
    `if=pflash,format=raw,unit=0,readonly=on,file=${ovmf.code}`,
    '-drive',
    `if=pflash,format=raw,unit=1,file=${vars}`,
    '-chardev',
    `socket,id=chrtpm,path=${tpmSocket}`,
    '-tpmdev',
    'emulator,id=tpm0,chardev=chrtpm',
    '-device',
    'tpm-crb,tpmdev=tpm0',
    // A guest kernel panic (dm-verity's on a corrupted block) ends QEMU with exit code 1.
    '-device',
    'pvpanic-pci',
    '-action',
    'panic=exit-failure',
  ];
  options.disks.forEach((disk, index) => {
    const drive = [`if=none`, `id=disk${index}`, `format=${disk.format ?? 'raw'}`, `file=${disk.file}`];
    if (disk.readOnly) drive.push('readonly=on');
    const device = [`virtio-blk-pci`, `drive=disk${index}`];
    if (disk.serial !== undefined) device.push(`serial=${disk.serial}`);
    if (index === 0) device.push('bootindex=0');
    args.push('-drive', drive.join(','), '-device', device.join(','));
  });
  if ((options.network ?? 'isolated') === 'isolated') {
    // romfile=: no iPXE option ROM, which OVMF would run (seconds under TCG) and measure into PCR 2.
    args.push('-netdev', 'user,id=net0,restrict=on', '-device', 'virtio-net-pci,netdev=net0,romfile=');
  }
  return args;
}

/** Waits for a process to end, up to `ms`; resolves whether it ended. */
async function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  return Promise.race([
    new Promise<boolean>((resolve) => {
      child.once('exit', () => {
        resolve(true);
      });
    }),
    sleep(ms).then(() => false),
  ]);
}

/** SIGTERM, then SIGKILL after 5 s. */
async function stop(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  if (await waitForExit(child, 5000)) return;
  child.kill('SIGKILL');
  await waitForExit(child, 5000);
}

async function waitForSocket(path: string, child: ChildProcess, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (existsSync(path)) return;
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode} before making ${path}`);
    await sleep(50);
  }
  throw new Error(`${what} made no socket ${path} within 5 s`);
}

/** Boots one VM and returns its serial console once it is stopped (every process it started ended). */
export async function bootVm(options: BootVmOptions): Promise<BootVmResult> {
  const scratch = await mkdtemp(join(tmpdir(), 'constellation-vm-'));
  let swtpm: ChildProcess | undefined;
  let qemu: ChildProcess | undefined;
  try {
    const vars = join(scratch, 'OVMF_VARS.fd');
    await copyFile((options.ovmf ?? DEBIAN_OVMF).vars, vars);
    let tpmSocket = options.tpmSocket;
    if (tpmSocket === undefined) {
      tpmSocket = join(scratch, 'swtpm.sock');
      const child = spawn(
        'swtpm',
        [
          'socket',
          '--tpm2',
          '--tpmstate',
          `dir=${scratch}`,
          '--ctrl',
          `type=unixio,path=${tpmSocket}`,
          '--flags',
          'startup-clear',
        ],
        { stdio: 'ignore' },
      );
      swtpm = child;
      await Promise.race([
        waitForSocket(tpmSocket, child, 'swtpm'),
        new Promise<never>((_, reject) => {
          child.once('error', (e) => {
            reject(new Error(`swtpm could not start: ${e.message}`));
          });
        }),
      ]);
    }
    await writeFile(options.serialLog, '');

    const started = Date.now();
    const child = spawn('qemu-system-x86_64', qemuArguments(options, vars, tpmSocket), {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    qemu = child;
    let qemuMessages = '';
    child.stderr.on('data', (chunk: Buffer) => {
      qemuMessages = (qemuMessages + chunk.toString()).slice(-8000);
    });
    let spawnError: Error | undefined;
    child.once('error', (error) => {
      spawnError = error;
    });

    const log = await open(options.serialLog, 'r');
    const lines: SerialLine[] = [];
    let serial = '';
    let partial = '';
    let outcome: BootVmResult['outcome'] = 'timeout';
    const buffer = Buffer.alloc(1 << 16);
    const decoder = new StringDecoder('utf8');
    try {
      for (;;) {
        const ended = child.exitCode !== null || child.signalCode !== null;
        for (;;) {
          const { bytesRead } = await log.read(buffer, 0, buffer.length, null);
          if (bytesRead === 0) break;
          const text = decoder.write(buffer.subarray(0, bytesRead));
          serial += text;
          const parts = (partial + text).split('\n');
          partial = parts.pop() ?? '';
          const atMs = Date.now() - started;
          for (const part of parts) lines.push({ atMs, text: part.replace(/\r$/, '') });
        }
        if (spawnError !== undefined) throw new Error(`QEMU could not start: ${spawnError.message}`);
        if (options.until?.(serial) === true) {
          outcome = 'until';
          break;
        }
        if (ended) {
          outcome = 'exited';
          break;
        }
        if (Date.now() - started > options.timeoutMs) break;
        await sleep(100);
      }
    } finally {
      await log.close();
    }
    if (partial !== '') lines.push({ atMs: Date.now() - started, text: partial });
    const durationMs = Date.now() - started;
    await stop(child);
    return { outcome, exitCode: outcome === 'exited' ? child.exitCode : null, durationMs, serial, lines, qemuMessages };
  } finally {
    await stop(qemu);
    await stop(swtpm);
    await rm(scratch, { recursive: true, force: true });
  }
}
