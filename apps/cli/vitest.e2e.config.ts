import { packageProject } from '../../vitest.shared.ts';

// The end-to-end fault tests (`npm run e2e`): mini clusters for tens of minutes, so not in npm test.
// The bundles mini runs are built first, as for the cli tests (see the file).
export default packageProject('cli-e2e', {
  include: ['src/e2e/**/*.e2e.ts'],
  globalSetup: ['src/bundles.global-setup.ts'],
  timeoutMs: 30 * 60_000,
});
