import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Where the project's builds are cached outside any checkout (the Kubernetes programs, the node
 * images): $CONSTELLATION_CACHE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/constellation, an empty
 * variable counting as unset. tools/kubernetes/build.mjs follows the same rules.
 */
export function constellationCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const set = (name: string): string | undefined => (env[name] === '' ? undefined : env[name]);
  return set('CONSTELLATION_CACHE_DIR') ?? join(set('XDG_CACHE_HOME') ?? join(homedir(), '.cache'), 'constellation');
}
