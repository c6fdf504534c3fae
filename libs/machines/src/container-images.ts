import { basename } from 'node:path';
import type { Machine } from './machine.js';

/** `ctr`'s flags for the node's containerd, in namespace k8s.io (where the kubelet's images are). */
export const CTR_K8S_IO = ['--address', '/run/containerd/containerd.sock', '--namespace', 'k8s.io'] as const;

/** Where archives wait on the node while they are imported (containerd's own directory, on the node's disk). */
const IMPORT_DIR = '/var/lib/containerd/import';

async function waitForContainerd(machine: Machine, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answered = await machine
      .exec(['ctr', ...CTR_K8S_IO, 'version'], { timeoutMs: Math.min(timeoutMs, 30_000) })
      .then(
        () => true,
        () => false,
      );
    if (answered) return;
    if (Date.now() > deadline) throw new Error(`${machine.name}'s containerd did not answer within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Imports OCI archives of the host into the node's containerd (namespace k8s.io, where the kubelet
 * looks), once it answers within `readyTimeoutMs` (a VM under software emulation needs minutes).
 */
export async function importImages(
  machine: Machine,
  archives: readonly string[],
  readyTimeoutMs = 30_000,
): Promise<void> {
  await waitForContainerd(machine, readyTimeoutMs);
  for (const archive of archives) {
    const onNode = `${IMPORT_DIR}/${basename(archive)}`;
    await machine.copyIn(archive, onNode);
    try {
      await machine.exec(['ctr', ...CTR_K8S_IO, 'images', 'import', onNode], {
        timeoutMs: Math.max(120_000, readyTimeoutMs),
      });
    } finally {
      await machine.remove(onNode);
    }
  }
}

/** Gives `target` to an image the node's containerd holds (an OCI archive keeps a short name as it is). */
export async function tagImage(machine: Machine, source: string, target: string): Promise<void> {
  await machine.exec(['ctr', ...CTR_K8S_IO, 'images', 'tag', '--force', source, target], { timeoutMs: 30_000 });
}

/** The references and digests of the images the node's containerd holds, as `reference@digest`. */
export async function listImages(machine: Machine): Promise<Set<string>> {
  const { stdout } = await machine.exec(['ctr', ...CTR_K8S_IO, 'images', 'ls'], { timeoutMs: 30_000 });
  return new Set(
    stdout
      .split('\n')
      .slice(1)
      .map((line) => line.split(/\s+/))
      .map(([reference, , digest]) => `${reference}@${digest}`),
  );
}
