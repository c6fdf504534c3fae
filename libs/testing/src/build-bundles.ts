import { runChecked } from './run-command.js';
import { repoRoot } from './run-typescript.js';

/**
 * Builds the named projects' bundles (and what they depend on) with Nx, for tests and benchmarks
 * that run the shipped programs. Nx's cache makes this cheap when CI built them already.
 */
export async function buildBundles(projects: readonly string[], timeoutMs: number): Promise<void> {
  await runChecked('npx', ['nx', 'run-many', '-t', 'build', `--projects=${projects.join(',')}`], {
    timeoutMs,
    cwd: repoRoot(),
    env: { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' },
  });
}
