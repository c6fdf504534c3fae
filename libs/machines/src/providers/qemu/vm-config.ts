import { join } from 'node:path';

/** What QEMU runs a node's VM with; kept in the VM's directory (vm.json) for every power-on. */
export interface VmConfig {
  /** OVMF's code (read-only pflash) and the VM's own copy of its variable store. */
  firmware: { code: string; vars: string };
  /** Disks in boot order: the first (the ESP) gets bootindex 0. `serial` names it in the guest (/dev/disk/by-id/virtio-<serial>). */
  disks: { file: string; serial: string; readOnly: boolean; format: 'raw' | 'qcow2' }[];
  memoryMiB: number;
  cpus: number;
  /** `kvm` only where it has been seen to boot OVMF; `tcg` (software) otherwise. */
  accel: 'kvm' | 'tcg';
  /** A tap device on `bridge` (made at power-on when missing), and the guest's MAC address on it. */
  network?: { tap: string; mac: string; bridge: string };
  /** QEMU firmware configuration items (opt/constellation/...): files the guest reads, outside any measurement. */
  fwCfg: Record<string, string>;
}

/** The VM's files in its directory: QEMU's sockets, its log, its pid, the TPM's. */
export function vmPaths(dir: string): {
  config: string;
  qmp: string;
  guestAgent: string;
  serialLog: string;
  qemuPid: string;
  qemuLog: string;
  tpmDir: string;
  tpmControl: string;
  tpmPid: string;
  tpmLog: string;
} {
  return {
    config: join(dir, 'vm.json'),
    qmp: join(dir, 'qmp.sock'),
    guestAgent: join(dir, 'guest-agent.sock'),
    serialLog: join(dir, 'serial.log'),
    qemuPid: join(dir, 'qemu.pid'),
    qemuLog: join(dir, 'qemu.log'),
    tpmDir: join(dir, 'tpm'),
    tpmControl: join(dir, 'tpm', 'swtpm-ctrl.sock'),
    tpmPid: join(dir, 'tpm', 'swtpm.pid'),
    tpmLog: join(dir, 'tpm', 'swtpm.log'),
  };
}

/**
 * QEMU's command line for the VM. `-nodefaults` and an explicit bootindex: with QEMU's default
 * devices OVMF first tries an empty DVD and logs more events into PCR 4. The TPM is swtpm through
 * its control socket (QEMU's emulator backend), on the CRB interface as on current machines.
 */
export function qemuArguments(dir: string, config: VmConfig): string[] {
  const paths = vmPaths(dir);
  const args = [
    '-nodefaults',
    '-no-user-config',
    '-name',
    'constellation-node',
    '-machine',
    'q35',
    '-cpu',
    config.accel === 'kvm' ? 'host' : 'max',
    // The default translation cache adds about 1 GiB of host memory per VM under TCG.
    '-accel',
    config.accel === 'tcg' ? 'tcg,tb-size=256' : 'kvm',
    '-m',
    String(config.memoryMiB),
    '-smp',
    String(config.cpus),
    '-drive',
    `if=pflash,format=raw,unit=0,readonly=on,file=${config.firmware.code}`,
    '-drive',
    `if=pflash,format=raw,unit=1,file=${config.firmware.vars}`,
    '-chardev',
    `socket,id=tpm,path=${paths.tpmControl}`,
    '-tpmdev',
    'emulator,id=tpm0,chardev=tpm',
    '-device',
    'tpm-crb,tpmdev=tpm0',
    '-display',
    'none',
    '-serial',
    `file:${paths.serialLog}`,
    '-qmp',
    `unix:${paths.qmp},server=on,wait=off`,
    '-device',
    'virtio-serial-pci,id=serial0',
    '-chardev',
    `socket,id=agent,path=${paths.guestAgent},server=on,wait=off`,
    '-device',
    'virtserialport,chardev=agent,name=org.qemu.guest_agent.0',
    '-pidfile',
    paths.qemuPid,
    '-daemonize',
  ];
  config.disks.forEach((disk, index) => {
    args.push(
      '-drive',
      `if=none,id=disk${index},format=${disk.format},file=${disk.file}${disk.readOnly ? ',readonly=on' : ''}`,
      '-device',
      `virtio-blk-pci,drive=disk${index},serial=${disk.serial}${index === 0 ? ',bootindex=0' : ''}`,
    );
  });
  if (config.network !== undefined)
    args.push(
      '-netdev',
      `tap,id=net0,ifname=${config.network.tap},script=no,downscript=no`,
      '-device',
      `virtio-net-pci,netdev=net0,mac=${config.network.mac}`,
    );
  for (const [name, file] of Object.entries(config.fwCfg)) args.push('-fw_cfg', `name=${name},file=${file}`);
  return args;
}
