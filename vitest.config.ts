import { defineConfig } from 'vitest/config';

// One vitest process for the whole repository; each package is its own project.
export default defineConfig({
  test: {
    projects: ['libs/*', 'apps/*', 'tools'],
    maxWorkers: 2,
    // One real control plane for the run, for the packages that talk to Kubernetes.
    globalSetup: ['tools/test/kubernetes.global-setup.ts'],
    coverage: {
      provider: 'v8',
      include: ['libs/*/src/**/*.ts', 'apps/*/src/**/*.ts'],
      exclude: ['**/gen/**', '**/*.test.ts'],
      reporter: ['text-summary', 'lcov'],
    },
  },
});
