import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { chmod, lstat, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { recoverNode } from './recover-command.js';
import { looseSecretFileWarning, workspaceFiles, writeWorkspaceFile } from './workspace.js';

describe('workspace files', () => {
  it('never write the master secret through a symlink planted at the old temporary name, or at the file', async () => {
    const workspace = await tempDirForTest();
    const attacker = join(await tempDirForTest(), 'attacker-readable');
    await writeFile(attacker, '', { mode: 0o666 });
    const { masterSecret } = workspaceFiles(workspace);
    await symlink(attacker, `${masterSecret}.tmp-${process.pid}`);
    await writeWorkspaceFile(masterSecret, 'master secret', true);
    expect(await readFile(attacker, 'utf8')).toBe('');
    expect((await stat(masterSecret)).mode & 0o777).toBe(0o600);
    await symlink(attacker, workspaceFiles(workspace).kubeconfig);
    await writeWorkspaceFile(workspaceFiles(workspace).kubeconfig, 'admin credentials', true);
    expect(await readFile(attacker, 'utf8')).toBe('');
    expect((await lstat(workspaceFiles(workspace).kubeconfig)).isFile()).toBe(true);
  });

  it('give a secret 0600 even over a stale 0666 file, and leave no temporary file', async () => {
    const workspace = await tempDirForTest();
    const { masterSecret } = workspaceFiles(workspace);
    await writeFile(masterSecret, 'stale', { mode: 0o666 });
    await writeWorkspaceFile(masterSecret, 'master secret', true);
    expect((await stat(masterSecret)).mode & 0o777).toBe(0o600);
    expect(await readdir(workspace)).toEqual(['constellation-mastersecret.json']);
  });

  it('create a missing workspace directory 0700, whatever the umask', async () => {
    const workspace = join(await tempDirForTest(), 'new', 'workspace');
    const umask = process.umask(0o022);
    try {
      await writeWorkspaceFile(workspaceFiles(workspace).config, 'config', false);
    } finally {
      process.umask(umask);
    }
    expect((await stat(workspace)).mode & 0o777).toBe(0o700);
  });
});

describe('a secret file readable by others', () => {
  it('is named with its mode and a chmod that runs as printed, even for a path with quotes and spaces', async () => {
    const dir = join(await tempDirForTest(), "it's a workspace");
    const { masterSecret } = workspaceFiles(dir);
    await writeWorkspaceFile(masterSecret, 'secret', true);
    expect(await looseSecretFileWarning(masterSecret)).toBeUndefined();
    await chmod(masterSecret, 0o644);
    const warning = await looseSecretFileWarning(masterSecret);
    expect(warning).toContain('is accessible to others than its owner (mode 0644)');
    const command = /restrict it with: (.*)$/.exec(warning ?? '')?.[1] ?? '';
    await promisify(execFile)('sh', ['-c', command], { timeout: 5_000 });
    expect((await stat(masterSecret)).mode & 0o777).toBe(0o600);
    expect(await looseSecretFileWarning(masterSecret)).toBeUndefined();
  });

  it('makes recover warn before it contacts any node', async () => {
    const workspace = await tempDirForTest();
    const { masterSecret } = workspaceFiles(workspace);
    await writeFile(masterSecret, '{}', { mode: 0o640 });
    const warnings: string[] = [];
    await expect(
      recoverNode(workspace, '127.0.0.1:1', (message) => warnings.push(message), { attempts: 1, delayMs: 0 }),
    ).rejects.toThrow();
    expect(warnings).toEqual([
      expect.stringContaining(`warning: ${masterSecret} is accessible to others than its owner (mode 0640)`),
    ]);
  });
});
