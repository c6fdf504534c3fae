// The tests' machines run their unit runner and `systemctl` from @constellation/node-environment's
// built entries (dist/runner-main.js, dist/systemctl-main.js). Built here, once, before any test
// starts, never from a test (Nx restores a cached build by rewriting its files).
import { buildBundles } from '@constellation/testing';

export default async function buildNodePrograms(): Promise<void> {
  await buildBundles(['@constellation/node-environment'], 240_000);
}
