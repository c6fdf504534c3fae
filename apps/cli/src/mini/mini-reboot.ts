import { selfCommand } from '../self-command.js';
import { VmMachine } from '@constellation/machines';
import { machineOf } from './mini-state.js';
import { powerOn, powerTargets } from './mini-power.js';

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
  // Refused before anything stops: no such node, or a cluster of an older CLI.
  const {
    state,
    nodes: [node],
  } = await powerTargets(workspace, { names: [name], all: false });
  if (node === undefined) throw new Error(`node "${name}" found and lost`);
  if (fullShutdown) {
    for (const controlPlane of state.nodes.filter((n) => n.role === 'control-plane' && n.name !== name)) {
      await machineOf(controlPlane).shutdown();
    }
    print('every other control plane powered off (full control-plane shutdown): no JoinService runs');
  }
  const machine = machineOf(node);
  await machine.shutdown();
  // The boot is measured again; a VM's images are imported again (its containerd keeps them in
  // memory), and the bootstrapper rejoins with the key from its rejoin ticket.
  await powerOn(state, workspace, node, print);
  print(
    machine instanceof VmMachine
      ? `${name} rebooted: TPM reset, OVMF measured the boot, systemd started the bootstrapper (it rejoins)`
      : `${name} rebooted: TPM reset, boot measured, node booted (containerd, bootstrapper, kubelet)`,
  );
  if (node.role === 'control-plane' && fullShutdown) {
    print(`it waits for: ${selfCommand(workspace, ['recover', '--endpoint', `${node.ip}:${node.recoveryPort}`])}`);
  }
}
