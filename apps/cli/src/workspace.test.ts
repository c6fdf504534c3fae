import { lstat, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { workspaceFiles, writeWorkspaceFile } from './workspace.js';

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
});
