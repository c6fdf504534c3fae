import { access, constants, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The programs tools/kubernetes/build.mjs builds, by the name each has in its bin directory. */
export const KUBERNETES_PROGRAMS = [
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubeadm',
  'kubelet',
  'kubectl',
  'etcd',
  'containerd',
  'containerd-shim-runc-v2',
  'ctr',
  'runc',
] as const;
export type KubernetesProgram = (typeof KUBERNETES_PROGRAMS)[number];

/** One built set of the real programs, all of one Kubernetes release. */
export interface KubernetesPrograms {
  readonly binDir: string;
  /** The release they were built at, e.g. "v1.37.2". */
  readonly release: string;
  path(program: KubernetesProgram): string;
}

/**
 * The programs in `binDir` (the directory `node tools/kubernetes/build.mjs` prints). Fails, naming
 * the missing program and the build command, when the build is incomplete.
 */
export async function locateKubernetesPrograms(binDir: string): Promise<KubernetesPrograms> {
  let release: string;
  try {
    const manifest = JSON.parse(await readFile(join(binDir, 'release.json'), 'utf8')) as { release?: unknown };
    if (typeof manifest.release !== 'string') throw new Error('its "release" is not a string');
    release = manifest.release;
  } catch (error) {
    throw new Error(
      `${binDir} holds no complete build of the Kubernetes programs (release.json: ${(error as Error).message}); ` +
        'build them with: node tools/kubernetes/build.mjs',
      { cause: error },
    );
  }
  for (const program of KUBERNETES_PROGRAMS) {
    try {
      await access(join(binDir, program), constants.X_OK);
    } catch (error) {
      throw new Error(`${program} is missing from ${binDir}; rebuild with: node tools/kubernetes/build.mjs --rebuild`, {
        cause: error,
      });
    }
  }
  return { binDir, release, path: (program) => join(binDir, program) };
}
