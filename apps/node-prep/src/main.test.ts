import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
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

  it('prepares a node from a local manifest without signatures, warning loudly, and fails clearly when there is no version', async () => {
    const root = await tempDirForTest();
    await mkdir(join(root, 'usr/lib'), { recursive: true });
    await writeFile(join(root, 'usr/lib/os-release'), 'VERSION_ID=1.0\n');
    const artifact = Buffer.from('binary');
    await writeFile(join(root, 'artifact'), artifact);
    const manifest = join(root, 'manifest.json');
    await writeFile(
      manifest,
      JSON.stringify({
        kind: 'constellation-component-manifest-v1',
        kubernetesVersion: 'v1.32.9',
        components: [
          {
            name: 'tool',
            url: join(root, 'artifact'),
            hash: `sha256:${createHash('sha256').update(artifact).digest('hex')}`,
            installPath: '/opt/bin/tool',
          },
        ],
      }),
    );
    const ok = await run(
      '--root',
      root,
      '--force-kube-version',
      'v1.32.9',
      '--manifest-url',
      manifest,
      '--no-verify-signatures',
    );
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout.toString()).toContain('SIGNATURE VERIFICATION IS DISABLED');
    expect(await readFile(join(root, 'etc/kubernetes/kubelet.env'), 'utf8')).toBe('KUBELET_IMAGE_TAG=v1.32.9\n');
    const none = await run('--root', root, '--manifest-url', manifest);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^error: unable to determine the Kubernetes version/);
  });
});
