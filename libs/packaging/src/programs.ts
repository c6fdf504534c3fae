import { join } from 'node:path';
import { repoRoot } from './release-layout.js';

/** A program we ship: its command name and the app whose src/main.ts is its entry point. */
export interface Program {
  command: string;
  app: string;
}

export const BOOTSTRAPPER: Program = { command: 'constellation-bootstrapper', app: 'bootstrapper' };
export const CLI: Program = { command: 'constellation', app: 'cli' };
export const NODE_PREP: Program = { command: 'constellation-node-prep', app: 'node-prep' };
export const JOINSERVICE: Program = { command: 'constellation-joinservice', app: 'joinservice' };

/** The programs shipped as single executables (the JoinService ships as a container image). */
export const EXECUTABLE_PROGRAMS: readonly Program[] = [BOOTSTRAPPER, CLI, NODE_PREP];

export function entryPoint(program: Program): string {
  return join(repoRoot, 'apps', program.app, 'src', 'main.ts');
}

export const bundleScript = join(repoRoot, 'tools', 'build', 'bundle.mjs');
