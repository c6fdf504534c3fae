import { UsageError } from '@constellation/command-line';
import { VmMachine } from '@constellation/machines';
import { selfCommand } from '../self-command.js';
import { kubernetesBinDirOf, machineOf, nodeImage, readMiniState } from './mini-state.js';
import type { MiniNode, MiniState } from './mini-state.js';
import { nodeImages } from './node-images.js';
import { powerOnVm } from './start-node.js';

/** Which nodes a power command acts on: the named ones, or every node with `all`. */
export interface PowerTargets {
  names: readonly string[];
  all: boolean;
}

/** The cluster and the nodes `targets` name, in the cluster's order; a name it lacks is refused before anything changes. */
export async function powerTargets(
  workspace: string,
  targets: PowerTargets,
): Promise<{ state: MiniState; nodes: MiniNode[] }> {
  const state = await readMiniState(workspace);
  if (state === undefined) throw new UsageError(`no mini cluster in ${workspace}`);
  if (targets.all === targets.names.length > 0)
    throw new UsageError('name the nodes (for example worker-1 worker-2) or give --all, not both');
  const known = state.nodes.map((n) => n.name);
  const unknown = targets.names.filter((name) => !known.includes(name));
  if (unknown.length > 0)
    throw new UsageError(`no node ${unknown.map((n) => `"${n}"`).join(', ')}; nodes: ${known.join(', ')}`);
  const nodes = targets.all ? state.nodes : state.nodes.filter((n) => targets.names.includes(n.name));
  // Refused before anything changes: a cluster of an older CLI cannot be powered by this one.
  nodeImage(state, workspace);
  return { state, nodes };
}

/**
 * Powers a node on as its cloud would: the TPM comes up reset, the boot is measured, the OS starts
 * its units (containerd, then the bootstrapper, which joins, rejoins or waits for recovery as its
 * state disk says). A VM's images go into its containerd again (it keeps them in memory).
 */
export async function powerOn(
  state: MiniState,
  workspace: string,
  node: MiniNode,
  print: (line: string) => void,
): Promise<void> {
  const machine = machineOf(node);
  if (machine instanceof VmMachine) {
    const images = node.tampered
      ? []
      : (await nodeImages(kubernetesBinDirOf(state, workspace), nodeImage(state, workspace))).worker;
    await powerOnVm(machine, images, print);
  } else {
    await machine.boot();
  }
}

/**
 * `constellation mini start <node…>`: powers on nodes that are off (made by `mini up
 * --powered-off-workers`, or stopped by `mini stop`), all at once; it returns once each has booted,
 * not when it has joined (`constellation status` shows that).
 */
export async function miniStart(
  workspace: string,
  targets: PowerTargets,
  print: (line: string) => void,
): Promise<void> {
  const { state, nodes } = await powerTargets(workspace, targets);
  const running = (
    await Promise.all(nodes.map(async (n) => ((await machineOf(n).poweredOn()) ? [n.name] : [])))
  ).flat();
  if (running.length > 0 && !targets.all)
    throw new UsageError(
      `already running: ${running.join(', ')} (\`${selfCommand(workspace, ['mini', 'reboot', running[0] ?? ''])}\` restarts one)`,
    );
  const off = nodes.filter((n) => !running.includes(n.name));
  if (off.length === 0) {
    print('every node runs already');
    return;
  }
  await Promise.all(
    off.map(async (node) => {
      const started = Date.now();
      await powerOn(state, workspace, node, print);
      print(
        `${node.name} powered on: TPM reset, boot measured, bootstrapper started (${((Date.now() - started) / 1000).toFixed(1)} s)`,
      );
    }),
  );
  const controlPlanes = off.filter((n) => n.role === 'control-plane');
  print(
    `${off.length === 1 ? 'it joins' : 'they join'} or rejoin${off.length === 1 ? 's' : ''} now; see: ${selfCommand(workspace, ['status'])}`,
  );
  if (controlPlanes.length === state.nodes.filter((n) => n.role === 'control-plane').length) {
    print('every control plane was off, so no JoinService runs: each control plane waits for its disk key from');
    for (const n of controlPlanes)
      print(`  ${selfCommand(workspace, ['recover', '--endpoint', `${n.ip}:${n.recoveryPort}`])}`);
  }
}

/**
 * `constellation mini stop <node…>`: powers nodes off, all at once. A clean stop asks the units to
 * end first (as `systemctl poweroff`); `powerLoss` cuts the power: every process dies at once.
 */
export async function miniStop(
  workspace: string,
  targets: PowerTargets,
  powerLoss: boolean,
  print: (line: string) => void,
): Promise<void> {
  const { nodes } = await powerTargets(workspace, targets);
  await Promise.all(nodes.map((node) => machineOf(node).shutdown({ powerLoss })));
  print(
    `${nodes.map((n) => n.name).join(', ')} ${powerLoss ? 'lost power (no clean shutdown)' : 'powered off'}; ` +
      `start ${nodes.length === 1 ? 'it' : 'them'} again with: ${selfCommand(workspace, ['mini', 'start', ...(targets.all ? ['--all'] : nodes.map((n) => n.name))])}`,
  );
}
