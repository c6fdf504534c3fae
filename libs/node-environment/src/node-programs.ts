import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HostView } from './mount-namespace.js';

/** The package's built entries (tsc writes them to dist/, beside which src/ is). */
const distDir = join(dirname(dirname(fileURLToPath(import.meta.url))), 'dist');

/**
 * The commands that run a node's unit runner and its `systemctl` outside mini (whose CLI bundle
 * carries both): the package's built entries, run by this Node.js; and what the node must be shown
 * of the host for them, read-only: the checkout, through whose node_modules they import. Refused,
 * naming the build, when they are not built.
 */
export function nodeProgramCommands(): { runnerCommand: string[]; systemctlCommand: string[]; hostView: HostView } {
  const entries = { runner: join(distDir, 'runner-main.js'), systemctl: join(distDir, 'systemctl-main.js') };
  for (const entry of Object.values(entries))
    if (!existsSync(entry))
      throw new Error(
        `${entry} is missing: build it with \`npx nx run @constellation/node-environment:build\` (npm run build builds every package)`,
      );
  return {
    runnerCommand: [process.execPath, entries.runner],
    systemctlCommand: [process.execPath, entries.systemctl],
    hostView: [{ show: join(distDir, '..', '..', '..') }, { show: process.execPath }],
  };
}
