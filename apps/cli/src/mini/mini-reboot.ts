import { join } from 'node:path';
import { measureBoot } from '@constellation/attestation';
import { UsageError } from '@constellation/command-line';
import { SocketTransport, SwtpmControl, Tpm } from '@constellation/tpm';
import { selfCommand } from '../self-command.js';
import { bootChain } from './boot-chain.js';
import { spawnDetached } from './detached.js';
import { nodeImage, readMiniState, stopProcess, writeMiniState } from './mini-state.js';
import { readNodeJoinService } from './node-joinservice.js';
import { tamperedBootstrapper } from './start-node.js';

/**
 * `constellation mini reboot <node>`: what a machine reboot does to a node. Its bootstrapper
 * stops, its TPM is power-cycled (PCRs back to zero), the boot chain is measured again and the
 * bootstrapper starts again: with an initialised state disk it rejoins. `stopJoinService` also
 * stops the JoinService first, as in a full control-plane shutdown, so a rebooted control plane
 * waits for `constellation recover`.
 */
export async function miniReboot(
  workspace: string,
  name: string,
  stopJoinService: boolean,
  print: (line: string) => void,
): Promise<void> {
  const state = await readMiniState(workspace);
  if (state === undefined) throw new UsageError(`no mini cluster in ${workspace}`);
  const node = state.nodes.find((n) => n.name === name);
  if (node === undefined)
    throw new UsageError(`no node "${name}"; nodes: ${state.nodes.map((n) => n.name).join(', ')}`);
  const { bootstrapper } = nodeImage(state, workspace);
  if (stopJoinService) {
    for (const controlPlane of state.nodes.filter((n) => n.role === 'control-plane')) {
      const joinService = await readNodeJoinService(controlPlane);
      if (joinService !== undefined) await stopProcess(joinService.pid);
    }
    print('JoinService stopped on every control plane (full control-plane shutdown)');
  }
  await stopProcess(node.bootstrapperPid);
  await new SwtpmControl({ path: `${node.tpmSocket}.ctrl` }).reset();
  const tpm = new Tpm(new SocketTransport({ path: node.tpmSocket }));
  try {
    await tpm.startup();
    const bundle = node.tampered ? tamperedBootstrapper(node.dir, bootstrapper) : bootstrapper;
    await measureBoot(tpm, await bootChain(bundle));
  } finally {
    await tpm.close();
  }
  const [program = process.execPath, ...args] = node.bootstrapperCommand;
  node.bootstrapperPid = await spawnDetached(program, args, join(node.dir, 'bootstrapper.log'), {
    ...process.env,
    ...node.bootstrapperEnv,
  });
  await writeMiniState(workspace, state);
  print(`${name} rebooted: TPM reset, boot measured, bootstrapper started (pid ${node.bootstrapperPid})`);
  if (node.role === 'control-plane' && stopJoinService) {
    print(`it waits for: ${selfCommand(workspace, ['recover', '--endpoint', `${node.ip}:${node.recoveryPort}`])}`);
  }
}
