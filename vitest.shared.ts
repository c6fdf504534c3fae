import { defineProject } from 'vitest/config';
import type { UserWorkspaceConfig } from 'vitest/config';

// Every package resolves sibling packages to their TypeScript sources through this condition,
// so tests never depend on a prior build.
const sourceConditions = ['@constellation/source', 'node', 'import', 'default'];

/** The vitest project for one package: tests beside the code, every test bounded in time. */
export function packageProject(name: string, timeoutMs = 30_000): UserWorkspaceConfig {
  return defineProject({
    resolve: { conditions: sourceConditions },
    ssr: { resolve: { conditions: sourceConditions, externalConditions: sourceConditions } },
    test: {
      name,
      include: ['src/**/*.test.ts'],
      environment: 'node',
      testTimeout: timeoutMs,
      hookTimeout: timeoutMs,
    },
  });
}
