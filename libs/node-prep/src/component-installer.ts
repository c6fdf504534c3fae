import { realpath, rename } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { createExclusiveTempFile, syncDirectory } from '@constellation/files';
import type { ExclusiveTempFile } from '@constellation/files';
import type { Logger } from '@constellation/logger';
import { downloadComponent } from './component-download.js';
import type { ManifestComponent } from './component-manifest.js';
import { inspectExistingComponent } from './existing-component.js';
import type { RetryPolicy } from './fetch-with-retry.js';
import { allowedDirOf, checkInstallPaths } from './install-policy.js';
import { ensureDirectoryInsideRoot, isInside } from './root-paths.js';

export interface InstallOptions {
  retry: RetryPolicy;
  /** Directories (inside root) components may be installed under. */
  allowedDirs: readonly string[];
  /** Paths (inside root) no component may replace. */
  protectedPaths: readonly string[];
  logger: Logger;
}

/**
 * Installs components under `root` by digest. Every path is checked first; then every artifact
 * is streamed into its own unique temporary file and checked; only when all match are the files
 * renamed into place, so a tampered or missing artifact installs nothing. Temporary files are
 * removed on every error. A root-owned file already in place with the right digest is kept.
 * Returns whether anything changed.
 */
export async function installComponents(
  root: string,
  components: readonly ManifestComponent[],
  options: InstallOptions,
): Promise<boolean> {
  checkInstallPaths(components, options.allowedDirs, options.protectedPaths);
  const realProtected = await Promise.all(
    options.protectedPaths.map((p) => realpath(join(root, p)).catch(() => join(root, p))),
  );
  const staged: { temp: ExclusiveTempFile; target: string; component: ManifestComponent }[] = [];
  try {
    for (const component of components) {
      const allowed = await ensureDirectoryInsideRoot(root, allowedDirOf(component.installPath, options.allowedDirs));
      const dir = await ensureDirectoryInsideRoot(root, dirname(component.installPath));
      if (!isInside(allowed, dir))
        throw new Error(`component ${component.name}: ${dirname(component.installPath)} leads outside ${allowed}`);
      const target = join(dir, basename(component.installPath));
      if (realProtected.includes(target))
        throw new Error(`component ${component.name} would replace ${target}, which node preparation protects`);
      if ((await inspectExistingComponent(target, component.hash, component.mode)) === 'keep') {
        options.logger.info('component already installed', {
          component: component.name,
          path: component.installPath,
        });
        continue;
      }
      const temp = await createExclusiveTempFile(target, component.mode);
      staged.push({ temp, target, component });
      await downloadComponent(component, temp.handle, options.retry);
      await temp.handle.sync();
      await temp.close();
    }
    for (const { temp, target } of staged) await rename(temp.path, target);
  } catch (err) {
    await Promise.all(staged.map(({ temp }) => temp.discard()));
    throw err;
  }
  for (const dir of new Set(staged.map(({ target }) => dirname(target)))) await syncDirectory(dir);
  for (const { component } of staged)
    options.logger.info('component installed', { component: component.name, path: component.installPath });
  return staged.length > 0;
}
