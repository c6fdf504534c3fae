import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeMachineRecord } from '../../machine-record.js';
import type { VmConfig } from './vm-config.js';
import { vmPaths } from './vm-config.js';
import { VmMachine } from './vm-machine.js';

/** Debian's OVMF (package ovmf): the 4 MiB build without Secure Boot keys enrolled. */
export const OVMF = { code: '/usr/share/OVMF/OVMF_CODE_4M.fd', vars: '/usr/share/OVMF/OVMF_VARS_4M.fd' };

export interface VmMachineOptions {
  name: string;
  /** The VM's directory; its TPM was manufactured in `<dir>/tpm` (manufactureTpm). */
  dir: string;
  /** The image's disks in boot order (ESP first), and the VM's own state disk last. */
  disks: VmConfig['disks'];
  memoryMiB?: number;
  cpus?: number;
  accel?: VmConfig['accel'];
  network?: VmConfig['network'];
  /** Items the guest reads from QEMU's firmware configuration (name → text), e.g. its address. */
  fwCfg?: Record<string, string>;
}

/** Makes a VM, powered off: its record, its own copy of OVMF's variable store, its configuration. */
export async function createVmMachine(options: VmMachineOptions): Promise<VmMachine> {
  await mkdir(options.dir, { recursive: true });
  const record = { provider: 'qemu' as const, name: options.name, dir: options.dir };
  await writeMachineRecord(record);
  const vars = join(options.dir, 'OVMF_VARS.fd');
  await copyFile(OVMF.vars, vars);
  const fwCfg: Record<string, string> = {};
  for (const [name, text] of Object.entries(options.fwCfg ?? {})) {
    if (!/^opt\/[a-z0-9._/-]+$/.test(name))
      throw new RangeError(`fw_cfg name ${JSON.stringify(name)} is not opt/<name>`);
    const file = join(options.dir, 'fw_cfg', name.replaceAll('/', '_'));
    await mkdir(join(options.dir, 'fw_cfg'), { recursive: true });
    await writeFile(file, text);
    fwCfg[name] = file;
  }
  const config: VmConfig = {
    firmware: { code: OVMF.code, vars },
    disks: options.disks,
    memoryMiB: options.memoryMiB ?? 1024,
    cpus: options.cpus ?? 1,
    accel: options.accel ?? 'tcg',
    ...(options.network === undefined ? {} : { network: options.network }),
    fwCfg,
  };
  await writeFile(vmPaths(options.dir).config, `${JSON.stringify(config, null, 2)}\n`);
  return new VmMachine(record);
}
