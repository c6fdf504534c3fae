import { UsageError } from '@constellation/command-line';
import { bootNode, readNodeEnvironment, resetForBoot, shutdownNode } from '@constellation/node-environment';
import type { NodeEnvironment } from '@constellation/node-environment';
import { SocketTransport, SwtpmControl, Tpm } from '@constellation/tpm';
import { selfCommand } from '../self-command.js';
import { bootChain } from './boot-chain.js';
import { nodeImage, readMiniState } from './mini-state.js';
import type { MiniNode, MiniState } from './mini-state.js';
import { measuredBoot, tamperedBootstrapper } from './start-node.js';

async function environmentOf(workspace: string, node: MiniNode): Promise<NodeEnvironment> {
  const environment = await readNodeEnvironment(node.dir);
  if (environment === undefined)
    throw new UsageError(
      `the mini cluster in ${workspace} was started by an older constellation, whose nodes had no environment of their own (${node.name}): run \`${selfCommand(workspace, ['mini', 'down'])}\`, then \`${selfCommand(workspace, ['mini', 'up'])}\``,
    );
  return environment;
}

/** Powers a node off: its units stop, then its containers and shims; its mounts go. */
async function powerOff(workspace: string, node: MiniNode): Promise<void> {
  const environment = await environmentOf(workspace, node);
  await shutdownNode(environment);
  await resetForBoot(environment);
}

/**
 * `constellation mini reboot <node>`: what a machine reboot does to a node. Everything on it stops
 * (kubelet, containers, containerd, bootstrapper) and its mounts go, its TPM is power-cycled (PCRs
 * back to zero), the boot chain is measured again and the node boots: containerd, the bootstrapper
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
  nodeImage(state, workspace);
  for (const each of state.nodes) await environmentOf(workspace, each);
  if (fullShutdown) {
    for (const controlPlane of state.nodes.filter((n) => n.role === 'control-plane' && n.name !== name)) {
      await powerOff(workspace, controlPlane);
    }
    print('every other control plane powered off (full control-plane shutdown): no JoinService runs');
  }
  await powerOff(workspace, node);
  await powerOn(workspace, state, node);
  print(`${name} rebooted: TPM reset, boot measured, node booted (containerd, bootstrapper, kubelet)`);
  if (node.role === 'control-plane' && fullShutdown) {
    print(`it waits for: ${selfCommand(workspace, ['recover', '--endpoint', `${node.ip}:${node.recoveryPort}`])}`);
  }
}

/** TPM power cycle, measured boot, then the node's unit runner boots its units. */
async function powerOn(workspace: string, state: MiniState, node: MiniNode): Promise<void> {
  const { bootstrapper } = nodeImage(state, workspace);
  await new SwtpmControl({ path: `${node.tpmSocket}.ctrl` }).reset();
  const tpm = new Tpm(new SocketTransport({ path: node.tpmSocket }));
  try {
    await tpm.startup();
  } finally {
    await tpm.close();
  }
  const bundle = node.tampered ? tamperedBootstrapper(node.dir, bootstrapper) : bootstrapper;
  // Records before --tamper held no mode: their tampered nodes were "bootstrapper".
  const tamper = node.tampered ? (node.tamper ?? 'bootstrapper') : undefined;
  await measuredBoot(node.tpmSocket, await bootChain(bootstrapper), bundle, tamper, node.dir);
  await bootNode(await environmentOf(workspace, node));
}
