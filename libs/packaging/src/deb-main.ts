// `npm run deb`: the node package (bootstrapper and node-prep executables, units, drop-in).
import { buildExecutable } from './executable.js';
import { buildNodePackage } from './node-package.js';
import { BOOTSTRAPPER, NODE_PREP } from './programs.js';
import { defaultReleaseDir } from './release-layout.js';

const deb = await buildNodePackage(
  {
    bootstrapper: await buildExecutable(BOOTSTRAPPER, defaultReleaseDir),
    nodePrep: await buildExecutable(NODE_PREP, defaultReleaseDir),
  },
  defaultReleaseDir,
);
process.stdout.write(`${deb}\n`);
