// `npm run release`: builds every artifact and lists each with its size and SHA-256.
import { buildRelease, formatRelease } from './release.js';
import { appVersion, defaultReleaseDir, sourceRevision } from './release-layout.js';

const release = await buildRelease(defaultReleaseDir);
const heading = `constellation-ts ${appVersion('cli')} (revision ${await sourceRevision()}), in ${defaultReleaseDir}`;
process.stdout.write(formatRelease(release, heading));
