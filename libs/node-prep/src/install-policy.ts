import type { ManifestComponent } from './component-manifest.js';

/** Where components may be installed unless configured otherwise. */
export const DEFAULT_INSTALL_DIRS: readonly string[] = ['/run/state/bin', '/opt/bin'];

/**
 * Refuses install paths outside the allowed directories, and the files node preparation itself
 * relies on (the kubelet.env marker, the keyring, the seed, the serial record) even inside them:
 * a manifest must not be able to replace what decides whether it is trusted.
 */
export function checkInstallPaths(
  components: readonly ManifestComponent[],
  allowedDirs: readonly string[],
  protectedPaths: readonly string[],
): void {
  for (const c of components) {
    if (protectedPaths.includes(c.installPath))
      throw new Error(`component ${c.name} would replace ${c.installPath}, which node preparation protects`);
    if (!allowedDirs.some((dir) => c.installPath.startsWith(`${dir.replace(/\/$/, '')}/`)))
      throw new Error(
        `component ${c.name} installs to ${c.installPath}, outside the allowed directories ${allowedDirs.join(', ')}`,
      );
  }
}

/** The allowed directory `installPath` is under (checkInstallPaths made sure there is one). */
export function allowedDirOf(installPath: string, allowedDirs: readonly string[]): string {
  return allowedDirs.find((dir) => installPath.startsWith(`${dir.replace(/\/$/, '')}/`)) ?? '/';
}
