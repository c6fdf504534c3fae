import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { findOnPath, runCommand } from '@constellation/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildExecutable } from './executable.js';
import { EXECUTABLE_PROGRAMS } from './programs.js';
import { appVersion, repoRoot } from './release-layout.js';

// Kept between runs (under the ignored .tmp/): the build skips the injection only when the
// bundle, the Node.js binary and the recipe are byte-identical to the cached executable's.
const outDir = join(repoRoot, '.tmp', 'packaging-test', 'executables');

describe('one single executable per program', () => {
  const executables = new Map<string, string>();
  // A PATH with no node on it, and nothing else from this machine's environment.
  const emptyBin = join(outDir, 'empty-bin');
  const bareEnv = { PATH: emptyBin };

  beforeAll(async () => {
    await mkdir(emptyBin, { recursive: true });
    for (const program of EXECUTABLE_PROGRAMS) {
      executables.set(program.command, await buildExecutable(program, outDir));
    }
  }, 300_000);

  it('has no node on the PATH the programs run with', async () => {
    expect(await findOnPath('node', bareEnv.PATH)).toBeUndefined();
  });

  it.each(EXECUTABLE_PROGRAMS.map((p) => p.command))('%s prints its help without Node.js', async (command) => {
    const result = await runCommand(executables.get(command)!, ['--help'], { timeoutMs: 30_000, env: bareEnv });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toContain(`Usage: ${command} [options]`);
  });

  it('runs the program, not Node.js: a version, a refused flag with its exit code', async () => {
    const cli = executables.get('constellation')!;
    const version = await runCommand(cli, ['--version'], { timeoutMs: 30_000, env: bareEnv });
    expect(version.stdout.toString().trim()).toBe(appVersion('cli'));
    const refused = await runCommand(cli, ['--eval', '1'], { timeoutMs: 30_000, env: bareEnv });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("unknown option '--eval'");
  });

  it('compiles the code a command imports when it runs, from the assets beside the main script', async () => {
    // The CLI's commands are imported when they run: their code is not in the main script.
    const work = join(outDir, '.work', 'constellation', 'pieces');
    const assets = JSON.parse(await readFile(join(work, 'assets.json'), 'utf8')) as Record<string, string>;
    expect(Object.keys(assets).length).toBeGreaterThan(0);
    expect(await readFile(join(work, 'main.cjs'), 'utf8')).not.toContain('# What every node must prove');
    const workspace = await mkdtemp(join(outDir, 'workspace-'));
    try {
      const generated = await runCommand(
        executables.get('constellation')!,
        ['--workspace', workspace, 'config', 'generate'],
        { timeoutMs: 30_000, env: bareEnv },
      );
      expect(generated.code).toBe(0);
      expect(await readFile(join(workspace, 'constellation-conf.yaml'), 'utf8')).toContain(
        '# What every node must prove',
      );
      // Each piece it compiled came with V8's code cache from the build, and V8 took it.
      const reported = await runCommand(
        executables.get('constellation')!,
        ['--workspace', workspace, 'config', 'generate', '--force'],
        { timeoutMs: 30_000, env: { ...bareEnv, CONSTELLATION_DEBUG_CODE_CACHE: '1' } },
      );
      const lines = reported.stderr.split('\n').filter((line) => line.startsWith('code cache '));
      expect(lines.length).toBeGreaterThan(1);
      for (const line of lines) expect(line).toMatch(/^code cache chunks\/\S+\.cjs: taken$/);
    } finally {
      await rm(workspace, { recursive: true, force: true });
    }
  });
});
