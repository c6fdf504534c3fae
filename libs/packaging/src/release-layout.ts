import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runTool } from './run-tool.js';

/** The repository this package lives in (libs/packaging/src → the root). */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Where every release artifact lands (ignored by git, like every dist/). */
export const defaultReleaseDir = join(repoRoot, 'dist', 'release');

/** Where users find the sources; the OCI source label and the package's homepage. */
export const sourceUrl = process.env['CONSTELLATION_SOURCE_URL'] ?? 'https://example.invalid/constellation-ts';

/** The version an app's package.json declares; artifacts carry the version of what they hold. */
export function appVersion(app: string): string {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'apps', app, 'package.json'), 'utf8')) as unknown;
  const version = (manifest as { version?: unknown }).version;
  if (typeof version !== 'string' || !/^\d+\.\d+\.\d+/.test(version)) {
    throw new Error(`apps/${app}/package.json: expected a semantic "version", got ${JSON.stringify(version)}`);
  }
  return version;
}

/**
 * The commit the artifacts are built from, with "-dirty" when the work tree has changes: a label
 * that names a commit must not claim sources the commit does not hold.
 */
export async function sourceRevision(): Promise<string> {
  const head = (await runTool('git', ['rev-parse', 'HEAD'], { cwd: repoRoot })).trim();
  const changes = await runTool('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: repoRoot });
  return changes.trim() === '' ? head : `${head}-dirty`;
}
