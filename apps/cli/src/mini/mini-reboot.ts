import { UsageError } from '@constellation/command-line';
import { selfCommand } from '../self-command.js';
import { VmMachine } from '@constellation/machines';
import { kubernetesBinDirOf, machineOf, nodeImage, readMiniState } from './mini-state.js';
import { nodeImages } from './node-images.js';
import { powerOnVm } from './start-node.js';

/**
 * `constellation mini reboot <node>`: what a machine reboot does to a node. Everything on it stops
 * (kubelet, containers, containerd, bootstrapper) and its mounts go; at power-on its TPM is reset
 * (PCRs back to zero), the boot is measured again and the node boots: containerd, the bootstrapper
 * (with an initialised state disk it rejoins and starts the kubelet) and the kubelet. With
 * `fullShutdown`, every control plane is powered off first, as in a full control-plane shutdown:
 * the JoinService is gone with them, and a rebooted control plane waits for `constellation recover`.
 */
export async function miniReboot(
  workspace: string,
  name: string,
  fullShutdown: boolean,
  print: (line: string) => void,
): Promise<void> {
  const state = await readMiniState(workspace);
  if (state === undefined) throw new UsageError(`no mini cluster in ${workspace}`);
  const node = state.nodes.find((n) => n.name === name);
  if (node === undefined)
    throw new UsageError(`no node "${name}"; nodes: ${state.nodes.map((n) => n.name).join(', ')}`);
  // Refused before anything stops: a cluster of an older CLI cannot be rebooted by this one.
  const artifacts = nodeImage(state, workspace);
  if (fullShutdown) {
    for (const controlPlane of state.nodes.filter((n) => n.role === 'control-plane' && n.name !== name)) {
      await machineOf(controlPlane).shutdown();
    }
    print('every other control plane powered off (full control-plane shutdown): no JoinService runs');
  }
  const machine = machineOf(node);
  await machine.shutdown();
  if (machine instanceof VmMachine) {
    // The firmware measures the boot again; the node's images are imported again (its containerd
    // keeps them in memory), and the bootstrapper rejoins with the key from its rejoin ticket.
    const images = node.tampered ? [] : (await nodeImages(kubernetesBinDirOf(state, workspace), artifacts)).worker;
    await powerOnVm(machine, images, print);
    print(`${name} rebooted: TPM reset, OVMF measured the boot, systemd started the bootstrapper (it rejoins)`);
  } else {
    await machine.boot();
    print(`${name} rebooted: TPM reset, boot measured, node booted (containerd, bootstrapper, kubelet)`);
  }
  if (node.role === 'control-plane' && fullShutdown) {
    print(`it waits for: ${selfCommand(workspace, ['recover', '--endpoint', `${node.ip}:${node.recoveryPort}`])}`);
  }
}
