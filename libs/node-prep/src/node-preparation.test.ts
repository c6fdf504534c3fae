import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { MemoryLogger } from '@constellation/logger';
import { createTempDir, runChecked, tempDirForTest } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MANIFEST_KIND } from './component-manifest.js';
import { prepareNode } from './node-preparation.js';
import type { NodePreparationOptions } from './node-preparation.js';

/** A gpg home with one Ed25519 signing key; signs files with real detached OpenPGP signatures. */
async function gpgKey(name: string): Promise<{ publicKey: string; sign: (file: string) => Promise<void> }> {
  const dir = await createTempDir('constellation-gpg-');
  const home = dir.path;
  const env = { ...process.env, GNUPGHOME: home };
  cleanups.push(async () => {
    // gpg starts an agent per home directory; stop it with the directory.
    await runChecked('gpgconf', ['--kill', 'gpg-agent'], { timeoutMs: 10_000, env }).catch(() => undefined);
    await dir.remove();
  });
  await runChecked(
    'gpg',
    ['--batch', '--passphrase', '', '--quick-gen-key', `${name} <${name}@example.invalid>`, 'ed25519', 'sign', 'never'],
    { timeoutMs: 30_000, env },
  );
  const publicKey = (
    await runChecked('gpg', ['--armor', '--export', `${name}@example.invalid`], { timeoutMs: 10_000, env })
  ).stdout.toString();
  return {
    publicKey,
    sign: async (file) => {
      await runChecked('gpg', ['--batch', '--yes', '--armor', '--detach-sign', '--output', `${file}.asc`, file], {
        timeoutMs: 10_000,
        env,
      });
    },
  };
}

/** Serves a directory over HTTP on 127.0.0.1:0, recording requests; `failFirst` answers 503 first. */
async function artifactHost(
  dir: string,
): Promise<{ url: string; requests: string[]; failFirst: Map<string, number>; close: () => Promise<void> }> {
  const requests: string[] = [];
  const failFirst = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    requests.push(path);
    const remaining = failFirst.get(path) ?? 0;
    if (remaining > 0) {
      failFirst.set(path, remaining - 1);
      res.writeHead(503).end();
      return;
    }
    readFile(join(dir, path)).then(
      (body) => res.writeHead(200).end(body),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    failFirst,
    close: () =>
      new Promise((resolve) =>
        server.close(() => {
          resolve();
        }),
      ),
  };
}

const cleanups: (() => Promise<void>)[] = [];
const sha256 = (b: Buffer | string): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;
let trusted: Awaited<ReturnType<typeof gpgKey>>;
let stranger: Awaited<ReturnType<typeof gpgKey>>;

beforeAll(async () => {
  [trusted, stranger] = await Promise.all([gpgKey('release'), gpgKey('stranger')]);
}, 60_000);

/** A node root and an artifact host with a manifest for v1.32.9 listing kubelet and kubeadm. */
async function setup(overrides: { signWith?: 'trusted' | 'stranger' | 'none'; tamper?: boolean } = {}) {
  const root = await tempDirForTest();
  const site = await tempDirForTest();
  const host = await artifactHost(site);
  cleanups.push(host.close);
  await mkdir(join(root, 'usr/lib'), { recursive: true });
  await writeFile(join(root, 'usr/lib/os-release'), 'NAME="Node OS"\nVERSION_ID=3815.2.0\nCOREOS_BOARD=amd64-usr\n');
  await mkdir(join(root, 'etc/kubernetes/installer'), { recursive: true });
  await writeFile(
    join(root, 'etc/kubernetes/installer/kubelet.env'),
    'KUBELET_IMAGE_URL=registry.example/kubelet\nKUBELET_IMAGE_TAG=v1.31.0_node.1\n',
  );
  await writeFile(join(root, 'etc/pubring.asc'), trusted.publicKey);
  const kubelet = Buffer.from('#!/bin/sh\necho kubelet v1.32.9\n');
  const kubeadm = Buffer.from('#!/bin/sh\necho kubeadm v1.32.9\n');
  await mkdir(join(site, 'pkgs'), { recursive: true });
  await writeFile(
    join(site, 'pkgs/kubelet'),
    overrides.tamper === true ? Buffer.concat([kubelet, Buffer.from('# evil\n')]) : kubelet,
  );
  await writeFile(join(site, 'pkgs/kubeadm'), kubeadm);
  const manifestDir = join(site, 'manifests/amd64-usr/3815.2.0');
  await mkdir(manifestDir, { recursive: true });
  const manifestFile = join(manifestDir, 'v1.32.9.json');
  await writeFile(
    manifestFile,
    JSON.stringify({
      kind: MANIFEST_KIND,
      kubernetesVersion: 'v1.32.9',
      components: [
        {
          name: 'kubelet',
          url: `${host.url}/pkgs/kubelet`,
          hash: sha256(kubelet),
          installPath: '/run/state/bin/kubelet',
        },
        {
          name: 'kubeadm',
          url: `${host.url}/pkgs/kubeadm`,
          hash: sha256(kubeadm),
          installPath: '/run/state/bin/kubeadm',
        },
      ],
    }),
  );
  const signWith = overrides.signWith ?? 'trusted';
  if (signWith === 'trusted') await trusted.sign(manifestFile);
  if (signWith === 'stranger') await stranger.sign(manifestFile);
  const logger = new MemoryLogger();
  let reboots = 0;
  const options: NodePreparationOptions = {
    root,
    osReleasePath: '/usr/lib/os-release',
    forcedVersion: 'v1.32.9',
    seedFile: '/etc/kubernetes/installer/kubelet.env',
    manifestUrlTemplate: `${host.url}/manifests/{{.Board}}/{{.OSVersion}}/{{.KubernetesVersion}}.json`,
    verifySignatures: true,
    keyringPath: '/etc/pubring.asc',
    kubeletEnvPath: '/etc/kubernetes/kubelet.env',
    reboot: () => {
      reboots++;
      return Promise.resolve();
    },
    retry: { tries: 3, pauseMs: 10, timeoutMs: 5_000 },
    apiRetry: { tries: 2, pauseMs: 10, timeoutMs: 2_000 },
    logger,
  };
  return { root, site, host, options, logger, reboots: () => reboots, manifestFile };
}

afterAll(async () => {
  await Promise.all(cleanups.map((c) => c()));
});

const exists = (path: string): Promise<boolean> =>
  readFile(path).then(
    () => true,
    () => false,
  );

describe('node preparation with a local artifact host and real OpenPGP signatures', () => {
  it('installs the signed components by digest and writes kubelet.env last, deterministically', async () => {
    const { root, options } = await setup();
    const result = await prepareNode(options);
    expect(result).toEqual({
      kubernetesVersion: 'v1.32.9',
      versionSource: 'forced',
      installed: true,
      rebooting: false,
    });
    expect(await readFile(join(root, 'run/state/bin/kubelet'), 'utf8')).toContain('kubelet v1.32.9');
    expect(await readFile(join(root, 'etc/kubernetes/kubelet.env'), 'utf8')).toBe(
      'KUBELET_IMAGE_TAG=v1.32.9\nKUBELET_IMAGE_URL=registry.example/kubelet\n',
    );
  });

  it('reuses components already in place with the right digest', async () => {
    const { host, options } = await setup();
    await prepareNode(options);
    const downloads = host.requests.filter((r) => r.startsWith('/pkgs/')).length;
    expect((await prepareNode(options)).installed).toBe(false);
    expect(host.requests.filter((r) => r.startsWith('/pkgs/')).length).toBe(downloads);
  });

  it.each([
    [
      'a signature from another key',
      { signWith: 'stranger' as const },
      /not signed by the pinned keyring: signature check failed/,
    ],
    ['a missing .asc', { signWith: 'none' as const }, /v1\.32\.9\.json\.asc failed after 3 tries: HTTP 404/],
    [
      'a tampered artifact',
      { tamper: true },
      /component kubelet from .* has digest sha256:[0-9a-f]{64}, the manifest says sha256:[0-9a-f]{64}/,
    ],
  ])('stops with a clear error and installs nothing for %s', async (_what, overrides, message) => {
    const { root, options } = await setup(overrides);
    await expect(prepareNode(options)).rejects.toThrow(message);
    expect(await exists(join(root, 'run/state/bin/kubelet'))).toBe(false);
    expect(await exists(join(root, 'run/state/bin/kubeadm'))).toBe(false);
    expect(await exists(join(root, 'etc/kubernetes/kubelet.env'))).toBe(false);
  });

  it('rejects a manifest changed after signing, and an unreachable manifest host', async () => {
    const { root, options, manifestFile } = await setup();
    await writeFile(
      manifestFile,
      (await readFile(manifestFile, 'utf8')).replace('/run/state/bin/kubeadm', '/usr/bin/kubeadm'),
    );
    await expect(prepareNode(options)).rejects.toThrow(/not signed by the pinned keyring/);
    await expect(
      prepareNode({ ...options, manifestUrlTemplate: 'http://127.0.0.1:1/{{.Board}}.json' }),
    ).rejects.toThrow(/failed after 3 tries/);
    expect(await exists(join(root, 'etc/kubernetes/kubelet.env'))).toBe(false);
  });

  it('with --no-verify-signatures warns loudly and never fetches the signature', async () => {
    const { host, options, logger } = await setup({ signWith: 'none' });
    await prepareNode({ ...options, verifySignatures: false });
    expect(host.requests.some((r) => r.endsWith('.asc'))).toBe(false);
    expect(
      logger.entries.some((e) => e.level === 'warn' && e.message.startsWith('SIGNATURE VERIFICATION IS DISABLED')),
    ).toBe(true);
  });

  it('retries non-2xx answers and succeeds once the host recovers', async () => {
    const { host, options } = await setup();
    host.failFirst.set('/manifests/amd64-usr/3815.2.0/v1.32.9.json', 2);
    await prepareNode(options);
    expect(host.requests.filter((r) => r === '/manifests/amd64-usr/3815.2.0/v1.32.9.json')).toHaveLength(3);
  });

  it('reboots only when the OS update hook staged an update, and then leaves kubelet.env unwritten', async () => {
    const { root, options, reboots } = await setup();
    const staged = await prepareNode({ ...options, osUpdateCommand: ['sh', '-c', 'echo "update staged: 3815.3.0"'] });
    expect(staged.rebooting).toBe(true);
    expect(reboots()).toBe(1);
    expect(await exists(join(root, 'etc/kubernetes/kubelet.env'))).toBe(false);
    const nothing = await prepareNode({ ...options, osUpdateCommand: ['sh', '-c', 'echo "no update"'] });
    expect(nothing.rebooting).toBe(false);
    expect(reboots()).toBe(1);
    expect(await exists(join(root, 'etc/kubernetes/kubelet.env'))).toBe(true);
  });

  it('leaves no kubelet.env when it fails right before that step', async () => {
    const { root, options } = await setup();
    await expect(
      prepareNode({ ...options, osUpdateCommand: ['sh', '-c', 'echo crashed >&2; exit 3'] }),
    ).rejects.toThrow(/exited with 3: crashed/);
    expect(await exists(join(root, 'run/state/bin/kubelet'))).toBe(true); // work before the crash is kept, verified
    expect(await exists(join(root, 'etc/kubernetes/kubelet.env'))).toBe(false);
  });
});

describe('Kubernetes version discovery', () => {
  async function apiServer(gitVersion: string): Promise<{ url: string; close: () => Promise<void> }> {
    const server = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ gitVersion })),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    return {
      url: `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`,
      close: () =>
        new Promise((resolve) =>
          server.close(() => {
            resolve();
          }),
        ),
    };
  }

  it('prefers the forced value, then the request, then the API server, then the seed file', async () => {
    const { options, logger } = await setup();
    const { forcedVersion: _forced, ...base } = options;
    const api = await apiServer('v1.32.9');
    cleanups.push(api.close);
    expect((await prepareNode({ ...base, requestVersion: 'v1.32.9', apiServerUrl: api.url })).versionSource).toBe(
      'request',
    );
    expect((await prepareNode({ ...base, apiServerUrl: api.url })).versionSource).toBe('api-server');
    expect(
      logger.entries.some((e) => e.message === 'kubernetes version determined' && e.fields['source'] === 'api-server'),
    ).toBe(true);
    // API down: falls back to the seed file (v1.31.0_node.1 means v1.31.0+node.1), which has no manifest here.
    await expect(prepareNode({ ...base, apiServerUrl: 'http://127.0.0.1:1' })).rejects.toThrow(
      /v1\.31\.0%2Bnode\.1\.json failed/,
    );
    expect(
      logger.entries.some(
        (e) =>
          e.message === 'kubernetes version determined' &&
          e.fields['source'] === 'seed-file' &&
          e.fields['version'] === 'v1.31.0+node.1',
      ),
    ).toBe(true);
  });

  it('fails with every reason when no source has a version', async () => {
    const { options } = await setup();
    const { forcedVersion: _forced, ...base } = options;
    await expect(
      prepareNode({ ...base, seedFile: '/nonexistent', apiServerUrl: 'http://127.0.0.1:1' }),
    ).rejects.toThrow(
      /^unable to determine the Kubernetes version: no forced version; none in the request; API server: fetching http:\/\/127\.0\.0\.1:1\/version failed after 2 tries: .*; seed file: ENOENT/,
    );
  });
});
