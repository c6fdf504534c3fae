import { access, cp } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { basename, dirname, join, resolve } from 'node:path';

/** The programs `mini` runs: the bundles the build produces, as the node image would carry them. */
export interface MiniArtifacts {
  root: string;
  cli: string;
  bootstrapper: string;
  joinservice: string;
  kubeadm: string;
  /** The JoinService's ServiceAccount and RBAC (deploy/joinservice), which mini applies as a deployment would. */
  joinserviceManifests: string;
}

/** Bundles relative to this program (apps/cli/dist or apps/cli/src are both three levels below the repository). */
export async function findArtifacts(): Promise<MiniArtifacts> {
  const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');
  const base = root.endsWith('apps') ? resolve(root, '..') : root;
  const artifacts: MiniArtifacts = {
    root: base,
    cli: join(base, 'apps/cli/dist/constellation.mjs'),
    bootstrapper: join(base, 'apps/bootstrapper/dist/bootstrapper.mjs'),
    joinservice: join(base, 'apps/joinservice/dist/joinservice.mjs'),
    kubeadm: join(base, 'libs/sandbox/dist/kubeadm.mjs'),
    joinserviceManifests: join(base, 'deploy/joinservice'),
  };
  for (const name of ['cli', 'bootstrapper', 'joinservice', 'kubeadm', 'joinserviceManifests'] as const) {
    const path = artifacts[name];
    try {
      await access(path);
    } catch {
      throw new Error(
        `mini needs the built ${name} at ${path}: run \`npm run build\` (\`npm run mini\` does it for you)`,
      );
    }
  }
  return artifacts;
}

/**
 * The node image: copies of the programs the nodes and their services run (each with the chunks it
 * loads later), taken once at `mini up` into `<dir>/image`. A rebuild of the repository while the
 * cluster runs (`npm run build`, `npm test`) deletes and rewrites the build's files; nodes running
 * from them failed to load a chunk on their way to joining, and a rebooted node measured a
 * bootstrapper the cluster does not expect. kubeadm needs no copy: nodes install their own.
 */
export async function copyNodeImage(artifacts: MiniArtifacts, dir: string): Promise<MiniArtifacts> {
  const image = { ...artifacts };
  for (const name of ['cli', 'bootstrapper', 'joinservice'] as const) {
    const copy = join(dir, 'image', name);
    await cp(dirname(artifacts[name]), copy, { recursive: true });
    image[name] = join(copy, basename(artifacts[name]));
  }
  image.joinserviceManifests = join(dir, 'image', 'joinservice-manifests');
  await cp(artifacts.joinserviceManifests, image.joinserviceManifests, { recursive: true });
  return image;
}
