import { access, cp, readFile, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { basename, dirname, join, resolve } from 'node:path';

/** The programs `mini` runs: the bundles the build produces, as the node image would carry them. */
export interface MiniArtifacts {
  root: string;
  cli: string;
  bootstrapper: string;
  joinservice: string;
  /** The JoinService's manifests (deploy/joinservice), which mini applies as a deployment would. */
  joinserviceManifests: string;
  /** The JoinService's container image (`npm run image`), as an OCI archive. */
  joinserviceImage: { archive: string; reference: string };
}

/** Bundles relative to this program (apps/cli/dist or apps/cli/src are both three levels below the repository). */
export async function findArtifacts(): Promise<MiniArtifacts> {
  const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');
  const base = root.endsWith('apps') ? resolve(root, '..') : root;
  const { version } = JSON.parse(await readFile(join(base, 'apps/joinservice/package.json'), 'utf8')) as {
    version: string;
  };
  const artifacts: MiniArtifacts = {
    root: base,
    cli: join(base, 'apps/cli/dist/constellation.mjs'),
    bootstrapper: join(base, 'apps/bootstrapper/dist/bootstrapper.mjs'),
    joinservice: join(base, 'apps/joinservice/dist/joinservice.mjs'),
    joinserviceManifests: join(base, 'deploy/joinservice'),
    joinserviceImage: {
      archive: join(base, `dist/release/joinservice-image-${version}.oci.tar`),
      reference: `constellation/joinservice:${version}`,
    },
  };
  for (const name of ['cli', 'bootstrapper', 'joinservice', 'joinserviceManifests'] as const) {
    const path = artifacts[name];
    try {
      await access(path);
    } catch {
      throw new Error(
        `mini needs the built ${name} at ${path}: run \`npm run build\` (\`npm run mini\` does it for you)`,
      );
    }
  }
  const image = await stat(artifacts.joinserviceImage.archive).catch(() => undefined);
  const bundle = await stat(artifacts.joinservice);
  if (image === undefined || image.mtimeMs < bundle.mtimeMs)
    throw new Error(
      `mini needs the JoinService image built from the current JoinService at ${artifacts.joinserviceImage.archive}${image === undefined ? '' : ' (the one there is older than the JoinService bundle)'}: run \`npm run image\` (\`npm run mini\` does it for you)`,
    );
  return artifacts;
}

/**
 * The node image: copies of the programs the nodes and their services run (each with the chunks it
 * loads later), taken once at `mini up` into `<dir>/image`. A rebuild of the repository while the
 * cluster runs (`npm run build`, `npm test`) deletes and rewrites the build's files; nodes running
 * from them failed to load a chunk on their way to joining, and a rebooted node measured a
 * bootstrapper the cluster does not expect. kubeadm and the kubelet need no copy: nodes install
 * their own, and the JoinService's image is in every control plane's containerd once imported.
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
