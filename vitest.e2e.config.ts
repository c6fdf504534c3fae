import { defineConfig } from 'vitest/config';

// `npm run e2e`: the end-to-end tests too long for `npm test` (vitest.config.ts), one at a time.
export default defineConfig({
  test: {
    projects: ['apps/cli/vitest.e2e.config.ts'],
    maxWorkers: 1,
    // The programs' directory (built when missing); no shared control plane: every test runs mini.
    globalSetup: ['tools/test/kubernetes.global-setup.ts'],
  },
});
