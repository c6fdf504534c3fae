import { readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDirForTest } from '@constellation/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { signingKey, testNode } from './node-prep.fixture.js';
import type { SigningKey } from './node-prep.fixture.js';
import { prepareNode } from './node-preparation.js';

let trusted: SigningKey;
beforeAll(async () => {
  trusted = await signingKey('release');
});

describe('kubelet.env', () => {
  it('is never written through a symlink planted at the old fixed temporary name', async () => {
    const node = await testNode(trusted);
    const victim = join(await tempDirForTest(), 'victim');
    await writeFile(victim, 'victim\n');
    await symlink(victim, join(node.root, 'etc/kubernetes/kubelet.env.partial'));
    await prepareNode(node.options);
    expect(await readFile(victim, 'utf8')).toBe('victim\n');
    expect(await readFile(join(node.root, 'etc/kubernetes/kubelet.env'), 'utf8')).toContain(
      'KUBELET_IMAGE_TAG=v1.37.2',
    );
  });

  it('is 0644 even when a stale 0666 file is in the way, and leaves no temporary file', async () => {
    const node = await testNode(trusted);
    await writeFile(join(node.root, 'etc/kubernetes/kubelet.env.partial'), 'stale', { mode: 0o666 });
    await writeFile(join(node.root, 'etc/kubernetes/kubelet.env'), 'stale', { mode: 0o666 });
    await prepareNode(node.options);
    expect((await stat(join(node.root, 'etc/kubernetes/kubelet.env'))).mode & 0o777).toBe(0o644);
    expect((await readdir(join(node.root, 'etc/kubernetes'))).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('carries only the allowed seed keys: a BOOTSTRAP_TOKEN in the seed stays out of the 0644 file', async () => {
    const node = await testNode(trusted);
    await writeFile(
      join(node.root, 'etc/kubernetes/installer/kubelet.env'),
      'KUBELET_IMAGE_URL=registry.example/kubelet\nKUBELET_IMAGE_TAG=v1.36.0_node.1\nBOOTSTRAP_TOKEN=abcdef.0123456789abcdef\n',
    );
    await prepareNode(node.options);
    expect(await readFile(join(node.root, 'etc/kubernetes/kubelet.env'), 'utf8')).toBe(
      'KUBELET_IMAGE_TAG=v1.37.2\nKUBELET_IMAGE_URL=registry.example/kubelet\n',
    );
    const log = JSON.stringify(node.logger.entries);
    expect(log).toContain('BOOTSTRAP_TOKEN'); // the name of what was dropped, never its value
    expect(log).not.toContain('abcdef.0123456789abcdef');
  });
});

describe('the OS update hook and the reboot', () => {
  it('does not reboot when the hook prints "no update staged" and exits 0', async () => {
    const node = await testNode(trusted);
    const result = await prepareNode({ ...node.options, osUpdateCommand: ['sh', '-c', 'echo "no update staged"'] });
    expect(result.rebooting).toBe(false);
    expect(node.reboots()).toBe(0);
    expect(await node.exists('etc/kubernetes/kubelet.env')).toBe(true);
  });

  it('reboots on exit code 100 whatever the hook prints, and then leaves kubelet.env unwritten', async () => {
    const node = await testNode(trusted);
    const result = await prepareNode({
      ...node.options,
      osUpdateCommand: ['sh', '-c', 'echo "nothing here"; exit 100'],
    });
    expect(result.rebooting).toBe(true);
    expect(node.reboots()).toBe(1);
    expect(await node.exists('etc/kubernetes/kubelet.env')).toBe(false);
  });

  it('fails (so the unit retries) when the reboot fails, with kubelet.env unwritten', async () => {
    const node = await testNode(trusted);
    await expect(
      prepareNode({
        ...node.options,
        osUpdateCommand: ['sh', '-c', 'exit 100'],
        reboot: () => Promise.reject(new Error('systemctl reboot exited with 1')),
      }),
    ).rejects.toThrow(
      'an OS update is staged but the reboot failed (kubelet.env stays unwritten): systemctl reboot exited with 1',
    );
    expect(await node.exists('etc/kubernetes/kubelet.env')).toBe(false);
  });

  it('fails when the hook fails, keeping the verified components and leaving no kubelet.env', async () => {
    const node = await testNode(trusted);
    await expect(
      prepareNode({ ...node.options, osUpdateCommand: ['sh', '-c', 'echo crashed >&2; exit 3'] }),
    ).rejects.toThrow(/OS update hook sh -c .* exited with 3: crashed/);
    expect(await node.exists('run/state/bin/kubelet')).toBe(true);
    expect(await node.exists('etc/kubernetes/kubelet.env')).toBe(false);
  });

  it('kills a hook that does not finish in time and fails, so the unit retries (30 minutes by default)', async () => {
    const node = await testNode(trusted);
    await expect(
      prepareNode({ ...node.options, osUpdateCommand: ['sleep', '30'], osUpdateTimeoutMs: 200 }),
    ).rejects.toThrow('OS update hook sleep 30 did not finish within 200 ms');
    expect(await node.exists('etc/kubernetes/kubelet.env')).toBe(false);
  });
});
