import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { createVmMachine } from '@constellation/machines';
import type { VmMachine } from '@constellation/machines';
import { cniConfig, peerPodRoutes, podSubnet } from '@constellation/node-environment';
import type { NodeSpec } from '../node-spec.js';
import type { VmImage } from '../vm-image.js';
import { tamperedEsp } from './vm-tamper.js';
import type { VmTamper } from './vm-tamper.js';

/** A VM node's memory: the kubelet, containerd and the preloaded images live in RAM (tmpfs /var). */
const VM_MEMORY_MIB = 2048;

/**
 * The state disk (sparse): LUKS2 header, then the encrypted file system that keeps
 * /etc/kubernetes, /var/lib/kubelet (the kubelet's node file system, pods' volumes) and the
 * prepared programs across reboots.
 */
const STATE_DISK_BYTES = 2 * 1024 * 1024 * 1024;

/** A MAC address in QEMU's range (52:54:00), fixed by the node's name, so a reboot keeps it. */
function macAddress(name: string): string {
  const bytes = createHash('sha256').update(name).digest().subarray(0, 3);
  return ['52', '54', '00', ...[...bytes].map((b) => b.toString(16).padStart(2, '0'))].join(':');
}

/** systemd-networkd's settings for the node's NIC: its address, the host as gateway, and every peer's pods. */
function networkConfig(spec: NodeSpec, mac: string): string {
  const routes = peerPodRoutes(spec.hosts, spec.index).flatMap((route) => [
    '',
    '[Route]',
    `Destination=${route.subnet}`,
    `Gateway=${route.via}`,
  ]);
  return [
    "# mini's bridge: a fixed address (no DHCP server there), the host as gateway, routes to the other nodes' pods.",
    '[Match]',
    `MACAddress=${mac}`,
    '',
    '[Network]',
    `Address=${spec.instance.ip}/24`,
    `Gateway=${spec.network.hostIp}`,
    ...routes,
    '',
  ].join('\n');
}

/**
 * The instance data mini's QEMU "cloud" passes each VM in fw_cfg, as a cloud's metadata service
 * would (the image applies it: tools/node-image/rootfs-files.ts, INSTANCE_DATA). Untrusted by
 * design: the metadata and artifact host's URL, the address, the names, the pod network.
 */
function instanceData(spec: NodeSpec, mac: string): Record<string, string> {
  const hosts = ['127.0.0.1 localhost', ...spec.hosts.map((host) => `${host.ip} ${host.name}`), ''].join('\n');
  return {
    'opt/constellation/env': [
      `CONSTELLATION_METADATA_URL=${spec.metadataUrl}`,
      `CONSTELLATION_MANIFEST_URL=${spec.metadataUrl}/artifacts/manifests/{{.Board}}/{{.OSVersion}}/{{.KubernetesVersion}}.json`,
      '',
    ].join('\n'),
    'opt/constellation/hostname': `${spec.instance.name}\n`,
    'opt/constellation/hosts': hosts,
    'opt/constellation/network': networkConfig(spec, mac),
    'opt/constellation/cni': cniConfig(podSubnet(spec.index)),
  };
}

/** An empty state disk (sparse): the bootstrapper formats it with LUKS2 at the node's first boot. */
async function createStateDisk(path: string): Promise<void> {
  const file = await open(path, 'wx', 0o600);
  try {
    await file.truncate(STATE_DISK_BYTES);
  } finally {
    await file.close();
  }
}

/**
 * mini's VM node: the node image booted by OVMF with the VM's own TPM (manufactured in
 * `<dir>/tpm` like every mini TPM), a tap on mini's bridge, the image's disks read-only, a state
 * disk of its own, and its instance data (`tamper`: a modified UKI in place of the image's). Everything else is the image's: its systemd starts
 * containerd and the bootstrapper, which talks to /dev/tpmrm0 and sends the firmware's event log.
 */
export async function createVmNode(
  spec: NodeSpec,
  image: VmImage,
  bridgeTap: string,
  tamper: VmTamper | undefined,
  accel: 'kvm' | 'tcg',
): Promise<VmMachine> {
  const mac = macAddress(spec.instance.name);
  const stateDisk = join(spec.dir, 'state.img');
  await createStateDisk(stateDisk);
  // A tampered VM boots its own modified ESP; it never joins, so it gets less of the host.
  const esp = tamper === undefined ? image.esp : await tamperedEsp(image, tamper, spec.dir);
  return createVmMachine({
    name: spec.instance.name,
    dir: spec.dir,
    disks: [
      { file: esp, serial: 'esp', readOnly: true, format: 'raw' },
      { file: image.root, serial: 'root', readOnly: true, format: 'raw' },
      { file: image.verity, serial: 'root-verity', readOnly: true, format: 'raw' },
      { file: stateDisk, serial: 'state', readOnly: false, format: 'raw' },
    ],
    memoryMiB: tamper === undefined ? VM_MEMORY_MIB : 1024,
    // Two vCPUs: QEMU translates each on a host thread of its own (multi-threaded TCG).
    cpus: tamper === undefined ? 2 : 1,
    accel,
    network: { tap: bridgeTap, mac, bridge: spec.network.bridge },
    fwCfg: instanceData(spec, mac),
  });
}
