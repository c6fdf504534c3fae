export type { ExclusiveTempFile } from './exclusive-temp-file.js';
export { createExclusiveTempFile } from './exclusive-temp-file.js';
export { pathExists } from './path-exists.js';
export { syncDirectory } from './sync-directory.js';

export { writeFileAtomic } from './write-file-atomic.js';
export { MAX_UNIX_SOCKET_PATH_BYTES, withUnixSocketPath } from './unix-socket-path.js';
export { constellationCacheDir } from './cache-dir.js';
export { sha256File } from './file-digest.js';
