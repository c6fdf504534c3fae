import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createTempDir, runChecked } from '@constellation/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { MANIFEST_PATH, componentsOf, signingKey, testNode } from './node-prep.fixture.js';
import type { SigningKey } from './node-prep.fixture.js';
import { prepareNode } from './node-preparation.js';

let trusted: SigningKey;
let stranger: SigningKey;
beforeAll(async () => {
  [trusted, stranger] = await Promise.all([signingKey('release'), signingKey('stranger')]);
});

describe('node preparation with a local artifact host and real OpenPGP signatures', () => {
  it('installs the signed components by digest and writes kubelet.env last, deterministically', async () => {
    const { root, options } = await testNode(trusted);
    const result = await prepareNode(options);
    expect(result).toEqual({
      kubernetesVersion: 'v1.37.2',
      versionSource: 'forced',
      installed: true,
      rebooting: false,
    });
    expect(await readFile(join(root, 'run/state/bin/kubelet'), 'utf8')).toContain('kubelet v1.37.2');
    expect((await stat(join(root, 'run/state/bin/kubelet'))).mode & 0o777).toBe(0o755);
    expect(await readFile(join(root, 'etc/kubernetes/kubelet.env'), 'utf8')).toBe(
      'KUBELET_IMAGE_TAG=v1.37.2\nKUBELET_IMAGE_URL=registry.example/kubelet\n',
    );
    expect(await readFile(join(root, 'var/lib/constellation/node-prep/highest-manifest-serial'), 'utf8')).toBe('10\n');
  });

  it('verifies a manifest signed by gpg (interoperability with the usual release tooling)', async () => {
    const home = await createTempDir('constellation-gpg-');
    const env = { ...process.env, GNUPGHOME: home.path };
    try {
      await runChecked(
        'gpg',
        ['--batch', '--passphrase', '', '--quick-gen-key', 'gpg <gpg@example.invalid>', 'ed25519', 'sign', '1y'],
        { timeoutMs: 30_000, env },
      );
      const publicKey = (
        await runChecked('gpg', ['--armor', '--export'], { timeoutMs: 10_000, env })
      ).stdout.toString();
      const node = await testNode({ publicKey, sign: () => Promise.resolve('') });
      await node.publish(undefined, 'none');
      const file = join(node.site, MANIFEST_PATH);
      await runChecked('gpg', ['--batch', '--yes', '--armor', '--detach-sign', '--output', `${file}.asc`, file], {
        timeoutMs: 10_000,
        env,
      });
      expect((await prepareNode(node.options)).installed).toBe(true);
    } finally {
      await runChecked('gpgconf', ['--kill', 'gpg-agent'], { timeoutMs: 10_000, env }).catch(() => undefined);
      await home.remove();
    }
  });

  it('reuses components already in place with the right digest', async () => {
    const { host, options } = await testNode(trusted);
    await prepareNode(options);
    const downloads = host.requests.filter((r) => r.startsWith('/pkgs/')).length;
    expect((await prepareNode(options)).installed).toBe(false);
    expect(host.requests.filter((r) => r.startsWith('/pkgs/')).length).toBe(downloads);
  });

  it.each([
    ['a signature from another key', 'stranger', /not signed by the pinned keyring: signature check failed/],
    ['a missing .asc', 'none', /v1\.37\.2\.json\.asc failed after 3 tries: HTTP 404/],
    [
      'a tampered artifact',
      'tamper',
      /^component kubelet \(http:.*\): the download does not match the manifest's digest$/,
    ],
  ] as const)('stops with a clear error and installs nothing for %s', async (_what, attack, message) => {
    const node = await testNode(trusted);
    if (attack === 'stranger') await node.publish(undefined, stranger);
    if (attack === 'none') await node.publish(undefined, 'none');
    if (attack === 'tamper')
      node.host.routes.set('/pkgs/kubelet', (_req, res) =>
        res.end(node.kubelet.toString().replace('kubelet', 'evillet')),
      );
    await expect(prepareNode(node.options)).rejects.toThrow(message);
    expect(await node.exists('run/state/bin/kubelet')).toBe(false);
    expect(await node.exists('run/state/bin/kubeadm')).toBe(false);
    expect(await node.exists('etc/kubernetes/kubelet.env')).toBe(false);
  });

  it('rejects a manifest changed after signing, and an unreachable manifest host', async () => {
    const node = await testNode(trusted);
    const signed = await node.publish();
    const { writeFile } = await import('node:fs/promises');
    await writeFile(
      join(node.site, MANIFEST_PATH),
      signed.toString().replace('/run/state/bin/kubeadm', '/opt/bin/kubeadm'),
    );
    await expect(prepareNode(node.options)).rejects.toThrow(/not signed by the pinned keyring/);
    await expect(
      prepareNode({ ...node.options, manifestUrlTemplate: 'http://127.0.0.1:1/{{.Board}}.json' }),
    ).rejects.toThrow(/failed after 3 tries/);
    expect(await node.exists('etc/kubernetes/kubelet.env')).toBe(false);
  });

  it('with --no-verify-signatures warns loudly, never fetches the signature, and never raises the serial floor', async () => {
    const node = await testNode(trusted);
    await node.publish((m) => (m['serial'] = 999), 'none');
    await prepareNode({ ...node.options, verifySignatures: false });
    expect(node.host.requests.some((r) => r.endsWith('.asc'))).toBe(false);
    expect(
      node.logger.entries.some((e) => e.level === 'warn' && e.message.startsWith('SIGNATURE VERIFICATION IS DISABLED')),
    ).toBe(true);
    expect(await node.exists('var/lib/constellation/node-prep/highest-manifest-serial')).toBe(false);
  });

  it('retries non-2xx answers and succeeds once the host recovers', async () => {
    const { host, options } = await testNode(trusted);
    host.failFirst.set(MANIFEST_PATH, 2);
    await prepareNode(options);
    expect(host.requests.filter((r) => r === MANIFEST_PATH)).toHaveLength(3);
  });

  it('installs several components of the same name prefix in one run without mixing their bytes', async () => {
    const node = await testNode(trusted);
    const { writeFile } = await import('node:fs/promises');
    const { sha256 } = await import('./node-prep.fixture.js');
    const bodies = Array.from({ length: 40 }, (_, i) => Buffer.from(`tool ${i} `.repeat(1000)));
    await Promise.all(bodies.map((b, i) => writeFile(join(node.site, `pkgs/tool-${i}`), b)));
    await node.publish((m) => {
      m['components'] = bodies.map((b, i) => ({
        name: `tool-${i}`,
        url: `${node.host.url}/pkgs/tool-${i}`,
        hash: sha256(b),
        size: b.length,
        installPath: `/opt/bin/tool-${i}`,
      }));
    });
    await prepareNode(node.options);
    for (const [i, b] of bodies.entries()) expect(await readFile(join(node.root, `opt/bin/tool-${i}`))).toEqual(b);
    expect(componentsOf(node.manifest)).toHaveLength(2);
  });
});

describe('Kubernetes version discovery (plain sources)', () => {
  it('prefers the forced value, then the request, then the seed file', async () => {
    const { options, logger } = await testNode(trusted);
    const { forcedVersion: _forced, ...base } = options;
    // No API server: the seed file (v1.36.0_node.1 means v1.36.0+node.1), which has no manifest here.
    // First: once v1.37.2 is prepared, the node never prepares an older version again.
    await expect(prepareNode(base)).rejects.toThrow(/v1\.36\.0%2Bnode\.1\.json failed/);
    expect(
      logger.entries.some(
        (e) =>
          e.message === 'kubernetes version determined' &&
          e.fields['source'] === 'seed-file' &&
          e.fields['version'] === 'v1.36.0+node.1',
      ),
    ).toBe(true);
    expect((await prepareNode({ ...base, requestVersion: 'v1.37.2' })).versionSource).toBe('request');
  });

  it('fails with every reason when no source has a version', async () => {
    const { options } = await testNode(trusted);
    const { forcedVersion: _forced, ...base } = options;
    await expect(prepareNode({ ...base, seedFile: '/nonexistent' })).rejects.toThrow(
      /^unable to determine the Kubernetes version: no forced version; none in the request; no API server configured; seed file: ENOENT/,
    );
  });
});
