import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { runTypeScript, tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';

const entry = new URL('./main.ts', import.meta.url).pathname;
const run = (...args: string[]) => runTypeScript(entry, args, { timeoutMs: 30_000 });

describe('constellation-node-prep entry point', () => {
  it('prints help with the torcx-like knobs and their defaults', async () => {
    const result = await run('--help');
    expect(result.code).toBe(0);
    const help = result.stdout.toString();
    for (const flag of [
      '--force-kube-version',
      '--no-verify-signatures',
      '--keyring',
      '--manifest-url',
      '--kubelet-env-path',
      'Examples:',
    ])
      expect(help).toContain(flag);
  });

  it('rejects unknown flags with exit code 2', async () => {
    const result = await run('--torcx-profile', 'x');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("unknown option '--torcx-profile'");
  });

  /** A node root, an HTTP host serving one component, and an unsigned local manifest listing it. */
  async function localNode(): Promise<{ root: string; manifest: string; close: () => Promise<void> }> {
    const root = await tempDirForTest();
    await mkdir(join(root, 'usr/lib'), { recursive: true });
    await writeFile(join(root, 'usr/lib/os-release'), 'VERSION_ID=1.0\nCOREOS_BOARD=amd64-usr\n');
    const artifact = Buffer.from('binary');
    const server = createServer((_req, res) => res.end(artifact));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    const manifest = join(root, 'manifest.json');
    await writeFile(
      manifest,
      JSON.stringify({
        kind: 'constellation-component-manifest-v2',
        serial: 1,
        expires: new Date(Date.now() + 3_600_000).toISOString(),
        board: 'amd64-usr',
        osVersion: '1.0',
        kubernetesVersion: 'v1.37.2',
        components: [
          {
            name: 'tool',
            url: `http://127.0.0.1:${port}/tool`,
            hash: `sha256:${createHash('sha256').update(artifact).digest('hex')}`,
            size: artifact.length,
            installPath: '/opt/bin/tool',
          },
        ],
      }),
    );
    return {
      root,
      manifest,
      close: () =>
        new Promise((resolve) => {
          server.close(() => {
            resolve();
          });
        }),
    };
  }

  it('prepares a node from a local manifest without signatures, warning loudly, and fails clearly when there is no version', async () => {
    const { root, manifest, close } = await localNode();
    try {
      const ok = await run(
        '--root',
        root,
        '--force-kube-version',
        'v1.37.2',
        '--manifest-url',
        manifest,
        '--no-verify-signatures',
      );
      expect(ok.stderr).toBe('');
      expect(ok.code).toBe(0);
      expect(ok.stdout.toString()).toContain('SIGNATURE VERIFICATION IS DISABLED');
      expect(await readFile(join(root, 'etc/kubernetes/kubelet.env'), 'utf8')).toBe('KUBELET_IMAGE_TAG=v1.37.2\n');
      expect(await readFile(join(root, 'opt/bin/tool'), 'utf8')).toBe('binary');
      const none = await run('--root', root, '--manifest-url', manifest);
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/^error: unable to determine the Kubernetes version/);
    } finally {
      await close();
    }
  });

  it('exits non-zero (so the unit retries) when an OS update is staged and the reboot command fails', async () => {
    const { root, manifest, close } = await localNode();
    try {
      const args = ['--root', root, '--force-kube-version', 'v1.37.2', '--manifest-url', manifest];
      // The command is split on spaces, so the hook is a script.
      const hook = join(root, 'os-update-hook');
      await writeFile(hook, '#!/bin/sh\necho "nothing to read here"\nexit 100\n', { mode: 0o755 });
      const failing = await run(
        ...args,
        '--no-verify-signatures',
        '--os-update-command',
        hook,
        '--reboot-command',
        'false',
      );
      expect(failing.code).toBe(1);
      expect(failing.stderr).toContain(
        'error: an OS update is staged but the reboot failed (kubelet.env stays unwritten): reboot command false exited with 1',
      );
      const nothing = await run(
        ...args,
        '--no-verify-signatures',
        '--os-update-command',
        'echo "no update staged"',
        '--reboot-command',
        'false',
      );
      expect(nothing.code).toBe(0);
      expect(await readFile(join(root, 'etc/kubernetes/kubelet.env'), 'utf8')).toBe('KUBELET_IMAGE_TAG=v1.37.2\n');
    } finally {
      await close();
    }
  });
});
