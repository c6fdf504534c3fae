// The cli tests run the programs a node image carries, from their bundles (mini; init against a
// real bootstrapper). They are built here, once, before any test of any package starts, never from
// a test: Nx restores a cached build by deleting and rewriting its files, and while it did, a mini
// cluster that another test file was running lost the chunks its bootstrappers load on the way to
// joining (ERR_MODULE_NOT_FOUND: a node stopped before joining, in about one full run in four).
// mini's control planes also carry the JoinService's container image (`npm run image`), built here
// after the bundles, from the JoinService just built.
import { buildBundles, repoRoot, runCommand } from '@constellation/testing';

export default async function buildTestedBundles(): Promise<void> {
  await buildBundles(['@constellation/cli', '@constellation/bootstrapper', '@constellation/joinservice'], 240_000);
  const image = await runCommand('npm', ['run', 'image'], { cwd: repoRoot(), timeoutMs: 240_000 });
  if (image.code !== 0) throw new Error(`npm run image failed:\n${image.stderr}`);
}
