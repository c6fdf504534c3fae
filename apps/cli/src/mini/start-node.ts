import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { importImages, namespaceMachinePaths, tagImage, vmPaths } from '@constellation/machines';
import type { Machine, VmBootPhase, VmMachine } from '@constellation/machines';
import type { MiniNode } from './mini-state.js';
import type { NodeSpec } from './node-spec.js';
import { BOOTSTRAPPER_UNIT, IMAGES_PRELOADED, createNamespaceNode } from './providers/namespace-node.js';
import { createVmNode } from './providers/vm-node.js';
import type { VmImage } from './vm-image.js';
import type { VmTamper } from './providers/vm-tamper.js';

export interface StartNodeOptions extends Omit<NodeSpec, 'dir' | 'ports'> {
  /** The cluster's directory; the node gets `<dir>/<name>`. */
  dir: string;
  /** Boot this node image in a VM (qemu provider) instead of a namespace node. */
  vmImage?: VmImage;
  /** How the VM runs: KVM where it was seen to work, else software emulation. Default tcg. */
  vmAccel?: 'kvm' | 'tcg';
  /** VMs that boot at the same time as this one, itself included (they share the cores). Default 1. */
  vmsBootingAtOnce?: number;
  /** Stops waiting for the VM's boot (another node failed: `mini up` reports that and ends). */
  signal?: AbortSignal;
  /** A VM that boots a modified UKI (it must be refused). */
  vmTamper?: VmTamper;
  /** Lines about a VM's boot, as it passes each phase. */
  print?: (line: string) => void;
  /** Make the node, put the image's images in, then power it off instead of starting its bootstrapper (namespace nodes). */
  poweredOff?: boolean;
}

const PORTS = { init: 9000, recovery: 9999, verify: 30081 };

/**
 * How long a VM may take from power-on to its guest agent and containerd, under software
 * emulation, when it boots alone or beside one other: VMs booting at once share the host's cores
 * (four on two cores took over 6 minutes each), so the bound grows with their number.
 */
const VM_BOOT_TIMEOUT_MS = 6 * 60_000;

const vmBootTimeoutMs = (vmsBootingAtOnce: number): number =>
  VM_BOOT_TIMEOUT_MS * Math.max(1, Math.ceil(vmsBootingAtOnce / 2));

/**
 * One node, powered on: the provider makes its machine (TPM, state disk, the image's files and
 * units), it boots (measured), the image's container images go into its containerd, and its
 * bootstrapper starts. Everything after the machine's creation goes through the Machine seam.
 */
export async function startNode(options: StartNodeOptions): Promise<MiniNode> {
  const { instance, tamper } = options;
  const dir = join(options.dir, instance.name);
  const spec = { ...options, dir, ports: PORTS };
  const controlPlane = instance.role === 'control-plane';
  let tpm: { socket: string; pid: number };
  if (options.vmImage === undefined) {
    const machine: Machine = await createNamespaceNode(spec);
    await machine.boot();
    await importImages(machine, controlPlane ? options.images.controlPlane : options.images.worker);
    if (controlPlane) for (const [source, target] of options.images.tags) await tagImage(machine, source, target);
    await machine.writeFile(IMAGES_PRELOADED, `${new Date().toISOString()}\n`);
    // Powered on later, its bootstrapper starts at boot (the images are there now).
    if (options.poweredOff === true) await machine.shutdown();
    else await machine.exec(['systemctl', 'start', BOOTSTRAPPER_UNIT], { timeoutMs: 30_000 });
    const paths = namespaceMachinePaths(machine.record.dir);
    tpm = { socket: paths.tpmSocket, pid: Number((await readFile(paths.tpmPidFile, 'utf8')).trim()) };
  } else {
    const tap = `${options.network.bridge}v${options.index}`;
    const machine = await createVmNode(spec, options.vmImage, tap, options.vmTamper, options.vmAccel ?? 'tcg');
    // A tampered VM never runs a pod: it gets no images.
    await powerOnVm(
      machine,
      options.vmTamper === undefined ? options.images.worker : [],
      options.print,
      vmBootTimeoutMs(options.vmsBootingAtOnce ?? 1),
      options.signal,
    );
    const paths = vmPaths(machine.record.dir);
    tpm = { socket: paths.tpmControl, pid: Number((await readFile(paths.tpmPid, 'utf8')).trim()) };
  }
  return {
    ...instance,
    dir,
    provider: options.vmImage === undefined ? 'namespaces' : 'qemu',
    tpmSocket: tpm.socket,
    swtpmPid: tpm.pid,
    initPort: PORTS.init,
    recoveryPort: PORTS.recovery,
    verifyPort: PORTS.verify,
    tampered: tamper !== undefined || options.vmTamper !== undefined,
    ...(tamper === undefined ? {} : { tamper }),
    ...(options.vmTamper === undefined ? {} : { vmTamper: options.vmTamper }),
  };
}

/**
 * Powers a VM node on (at creation and at `mini reboot`) and waits for its guest agent, showing
 * each boot phase; then the worker images go into its containerd, which keeps them in memory (a
 * reboot loses them, as a cloud node's image cache goes with its instance). The image's systemd
 * has started the bootstrapper already: the images arrive while it attests and joins (the kubelet
 * retries a pod whose image is not there yet).
 */
export async function powerOnVm(
  machine: VmMachine,
  images: readonly string[],
  print: (line: string) => void = () => undefined,
  timeoutMs = VM_BOOT_TIMEOUT_MS,
  signal?: AbortSignal,
): Promise<void> {
  await machine.boot();
  await waitForVmBoot(machine, print, timeoutMs, signal);
  signal?.throwIfAborted();
  if (images.length > 0) await importImages(machine, images, timeoutMs);
}

/**
 * Waits until the VM's guest agent answers (systemd runs, and with it the image's units), printing
 * each boot phase as the serial console shows it; fails with the initrd's reason when the boot
 * stops there (a root filesystem that does not match its hash, say).
 */
async function waitForVmBoot(
  machine: VmMachine,
  print: (line: string) => void,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  const started = Date.now();
  let shown: VmBootPhase | undefined;
  for (;;) {
    signal?.throwIfAborted();
    const progress = await machine.bootProgress();
    if (progress.phase !== shown) {
      shown = progress.phase;
      print(`${machine.name}: boot phase ${progress.phase} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    }
    if (progress.phase === 'failed')
      throw new Error(
        `${machine.name} stopped booting: ${progress.error ?? 'no reason given'} (serial console: ${machine.logPath()})`,
      );
    // The agent runs under systemd: asking earlier only queues requests it answers later.
    const booting = progress.phase === 'firmware' || progress.phase === 'kernel' || progress.phase === 'initrd';
    const answered = await (
      booting ? Promise.reject(new Error('booting')) : machine.exec(['true'], { timeoutMs: 30_000 })
    ).then(
      () => true,
      () => false,
    );
    if (answered) return;
    if (Date.now() - started > timeoutMs)
      throw new Error(
        `${machine.name}'s guest agent did not answer within ${timeoutMs / 1000} s of power-on; last boot phase: ${progress.phase} (serial console: ${machine.logPath()})`,
      );
    await new Promise((resolve) => setTimeout(resolve, 2_000));
  }
}
