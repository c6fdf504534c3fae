import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { importImages, namespaceMachinePaths, tagImage } from '@constellation/machines';
import type { Machine } from '@constellation/machines';
import type { MiniNode } from './mini-state.js';
import type { NodeSpec } from './node-spec.js';
import { BOOTSTRAPPER_UNIT, IMAGES_PRELOADED, createNamespaceNode } from './providers/namespace-node.js';

export interface StartNodeOptions extends Omit<NodeSpec, 'dir' | 'ports'> {
  /** The cluster's directory; the node gets `<dir>/<name>`. */
  dir: string;
}

/**
 * One node, powered on: the provider makes its machine (TPM, state disk, the image's files and
 * units), it boots (measured), the image's container images go into its containerd, and its
 * bootstrapper starts. Everything after the machine's creation goes through the Machine seam.
 */
export async function startNode(options: StartNodeOptions): Promise<MiniNode> {
  const { instance, tamper } = options;
  const ports = { init: 9000, recovery: 9999, verify: 30081 };
  const machine: Machine = await createNamespaceNode({
    ...options,
    dir: join(options.dir, instance.name),
    ports,
  });
  await machine.boot();
  const controlPlane = instance.role === 'control-plane';
  await importImages(machine, controlPlane ? options.images.controlPlane : options.images.worker);
  if (controlPlane) for (const [source, target] of options.images.tags) await tagImage(machine, source, target);
  await machine.writeFile(IMAGES_PRELOADED, `${new Date().toISOString()}\n`);
  await machine.exec(['systemctl', 'start', BOOTSTRAPPER_UNIT], { timeoutMs: 30_000 });
  const paths = namespaceMachinePaths(machine.record.dir);
  const swtpmPid = Number((await readFile(paths.tpmPidFile, 'utf8')).trim());
  return {
    ...instance,
    dir: machine.record.dir,
    provider: machine.record.provider,
    tpmSocket: paths.tpmSocket,
    swtpmPid,
    initPort: ports.init,
    recoveryPort: ports.recovery,
    verifyPort: ports.verify,
    tampered: tamper !== undefined,
    ...(tamper === undefined ? {} : { tamper }),
  };
}
