import { rm } from 'node:fs/promises';
import { pathExists } from '@constellation/files';
import type { NodePaths } from './node-paths.js';
import { writeFileAtomic } from './secure-files.js';

/**
 * The record that this boot's bootstrap configured Kubernetes on the node (kubeadm init or join
 * finished, or a rejoin had its keys), so that only starting the kubelet remains. It lives under
 * /run, which a reboot empties as it resets PCR 15: a bootstrapper restarted in a boot whose PCR
 * 15 is marked tells by it whether its predecessor died before or after that point.
 */
export async function recordKubernetesConfigured(paths: Pick<NodePaths, 'kubernetesConfigured'>): Promise<void> {
  await writeFileAtomic(paths.kubernetesConfigured, `${new Date().toISOString()}\n`);
}

export function isKubernetesConfigured(paths: Pick<NodePaths, 'kubernetesConfigured'>): Promise<boolean> {
  return pathExists(paths.kubernetesConfigured);
}

/** Removes a record no boot of this machine's current PCR 15 wrote (one /run kept across a restart of the TPM). */
export async function forgetKubernetesConfigured(paths: Pick<NodePaths, 'kubernetesConfigured'>): Promise<void> {
  await rm(paths.kubernetesConfigured, { force: true });
}
