import { defineProject } from 'vitest/config';
import type { UserWorkspaceConfig } from 'vitest/config';

// Every package resolves sibling packages to their TypeScript sources through this condition,
// so tests never depend on a prior build.
const sourceConditions = ['@constellation/source', 'node', 'import', 'default'];

export interface PackageProjectOptions {
  /** Bound of every test and hook (default 30 s). */
  timeoutMs?: number;
  /** Files run once before any test of any package starts (paths relative to the package). */
  globalSetup?: string[];
  /** Test file globs, relative to the package (default: every test file under src). */
  include?: string[];
}

/** The vitest project for one package: tests beside the code, every test bounded in time. */
export function packageProject(name: string, options: PackageProjectOptions = {}): UserWorkspaceConfig {
  const timeoutMs = options.timeoutMs ?? 30_000;
  return defineProject({
    resolve: { conditions: sourceConditions },
    ssr: { resolve: { conditions: sourceConditions, externalConditions: sourceConditions } },
    test: {
      name,
      include: options.include ?? ['src/**/*.test.ts'],
      environment: 'node',
      testTimeout: timeoutMs,
      hookTimeout: timeoutMs,
      ...(options.globalSetup === undefined ? {} : { globalSetup: options.globalSetup }),
    },
  });
}
