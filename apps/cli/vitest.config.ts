import { packageProject } from '../../vitest.shared.ts';

// The bundles mini and init's tests run are built once, before any test starts (see the file).
export default packageProject('cli', { globalSetup: ['src/bundles.global-setup.ts'] });
