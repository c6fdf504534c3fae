import { access } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join, resolve } from 'node:path';

/** The programs `mini` runs: the bundles the build produces, as the node image would carry them. */
export interface MiniArtifacts {
  root: string;
  cli: string;
  bootstrapper: string;
  joinservice: string;
  kubeadm: string;
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
  };
  for (const name of ['cli', 'bootstrapper', 'joinservice', 'kubeadm'] as const) {
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
