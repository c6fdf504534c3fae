import { mkdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { HealthCheckResponse_ServingStatus, HealthClient } from '@constellation/proto';
import { createTempDir, runChecked, sharedKubernetes, waitFor } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import { errorMessage } from '@constellation/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMAGE_USER_ID, JOINSERVICE_IMAGE_NAME, buildJoinServiceImage } from './container-image.js';
import type { BuiltImage } from './container-image.js';
import { writeJoinServiceMounts } from './joinservice-mounts.fixture.js';
import { createPodman } from './podman.fixture.js';
import type { Podman } from './podman.fixture.js';
import { repoRoot } from './release-layout.js';

/** What every test run asks of the container: unprivileged, nothing writable, no capabilities. */
const LOCKED_DOWN = ['--read-only', '--read-only-tmpfs=false', '--cap-drop=all', '--security-opt=no-new-privileges'];

describe('the JoinService container image', () => {
  let dir: TempDir;
  let podman: Podman;
  let image: BuiltImage;

  beforeAll(async () => {
    dir = await createTempDir('constellation-image-');
    podman = await createPodman(join(dir.path, 'containers'));
    image = await buildJoinServiceImage(join(dir.path, 'release'), { env: podman.env });
  }, 300_000);

  afterAll(async () => {
    await dir.remove();
  });

  it('is tagged as deploy/joinservice names it and carries version, revision and source labels', async () => {
    const daemonSet = await readFile(join(repoRoot, 'deploy', 'joinservice', 'daemonset.yaml'), 'utf8');
    expect(daemonSet).toContain(`image: ${image.reference}`);
    const inspected = await podman.run(['image', 'inspect', image.reference]);
    expect(inspected.stderr).toBe('');
    const [config] = JSON.parse(inspected.stdout.toString()) as [{ Labels: Record<string, string>; User: string }];
    expect(config.User).toBe(`${IMAGE_USER_ID}:${IMAGE_USER_ID}`);
    expect(config.Labels['org.opencontainers.image.version']).toBe('0.1.0');
    expect(config.Labels['org.opencontainers.image.revision']).toMatch(/^[0-9a-f]{40}(-dirty)?$/);
    expect(config.Labels['org.opencontainers.image.source']).toMatch(/^https:\/\//);
  });

  it('writes its digest into a file and a kustomization that pins deploy/joinservice to it', async () => {
    expect(image.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect((await readFile(image.digestFile, 'utf8')).trim()).toBe(image.digest);
    const kustomization = await readFile(image.kustomization, 'utf8');
    expect(kustomization).toContain(`  - name: ${JOINSERVICE_IMAGE_NAME}\n`);
    expect(kustomization).toContain(`    digest: ${image.digest}\n`);
    const base = /^resources:\n {2}- (.+)$/m.exec(kustomization)?.[1] ?? '';
    expect(resolve(join(image.kustomization, '..'), base)).toBe(join(repoRoot, 'deploy', 'joinservice'));
    // The archive's manifest is the one the digest names.
    const index = JSON.parse(
      (await runChecked('tar', ['-xOf', image.archive, 'index.json'], { timeoutMs: 30_000 })).stdout.toString(),
    ) as { manifests: { digest: string }[] };
    expect(index.manifests.map((m) => m.digest)).toEqual([image.digest]);
  });

  it('holds the runtime, its libraries, the bundle, CA certificates and the user database, nothing else', async () => {
    const unpacked = join(dir.path, 'unpacked');
    await mkdir(unpacked);
    await runChecked('tar', ['-xf', image.archive, '-C', unpacked], { timeoutMs: 60_000 });
    const manifestPath = join(unpacked, 'blobs', ...image.digest.split(':'));
    const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as { layers: { digest: string }[] };
    expect(manifest.layers).toHaveLength(1);
    const layer = join(unpacked, 'blobs', ...manifest.layers[0]!.digest.split(':'));
    const listing = (await runChecked('tar', ['-tzf', layer], { timeoutMs: 60_000 })).stdout.toString();
    const files = listing.split('\n').filter((path) => path !== '' && !path.endsWith('/'));
    const libraries = files.filter((path) => /^(lib|lib64)\/.+\.so(\.\d+)*$/.test(path));
    expect(libraries.some((path) => path.includes('libc.so'))).toBe(true);
    expect(files.filter((path) => !libraries.includes(path)).sort()).toEqual([
      'app/joinservice.mjs',
      'etc/group',
      'etc/passwd',
      'etc/ssl/certs/ca-certificates.crt',
      'usr/bin/node',
    ]);
  });

  it('prints its help with no network, no capabilities and a read-only root', async () => {
    const result = await podman.run(['run', '--rm', '--network=none', ...LOCKED_DOWN, image.reference, '--help']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toContain('Usage: constellation-joinservice');
  });

  it('runs as the non-root user and cannot write to its root file system', async () => {
    const probe = [
      "const { writeFileSync } = require('node:fs');",
      'let write;',
      "try { writeFileSync('/app/planted', 'x'); write = 'written'; } catch (err) { write = err.code; }",
      'console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), write }));',
    ].join('\n');
    const result = await podman.run([
      'run',
      '--rm',
      '--network=none',
      ...LOCKED_DOWN,
      '--entrypoint=/usr/bin/node',
      image.reference,
      '-e',
      probe,
    ]);
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout.toString())).toEqual({ uid: IMAGE_USER_ID, gid: IMAGE_USER_ID, write: 'EROFS' });
  });

  it('serves the gRPC health check from inside the container, given the mounted files and the real API server', async () => {
    // The run's control plane: the JoinService's kubeconfig names it, with the cluster CA and a
    // service account's token, and the host PKI mounted is the one kubeadm made for it.
    const k = sharedKubernetes();
    const kubectl = (...args: string[]) =>
      runChecked(join(k.binDir, 'kubectl'), ['--kubeconfig', k.superAdminKubeconfig, ...args], { timeoutMs: 30_000 });
    const namespace = `container-image-${Date.now().toString(36)}`;
    await kubectl('create', 'namespace', namespace);
    const mounts = join(dir.path, 'mounts');
    const name = `joinservice-test-${String(process.pid)}`;
    try {
      await kubectl('-n', namespace, 'create', 'serviceaccount', 'join-service');
      const token = (await kubectl('-n', namespace, 'create', 'token', 'join-service')).stdout.toString().trim();
      await writeJoinServiceMounts(
        mounts,
        {
          apiServerUrl: k.apiServerUrl,
          caCertificatePem: k.caCertificatePem,
          pkiDir: join(k.root, 'etc', 'kubernetes', 'pki'),
          token,
        },
        IMAGE_USER_ID,
      );
      // Host networking: the container reaches the API server through the host's route to its
      // network namespace, and this test probes the health port the way the kubelet probes a pod.
      const started = await podman.run([
        'run',
        '--detach',
        `--name=${name}`,
        '--network=host',
        ...LOCKED_DOWN,
        `--volume=${mounts}/config:/var/config:ro`,
        `--volume=${mounts}/mastersecret.json:/var/secrets/mastersecret.json:ro`,
        `--volume=${mounts}/pki:/etc/kubernetes/pki:ro`,
        `--volume=${mounts}/kubeconfig:/var/kubeconfig:ro`,
        image.reference,
        '--host=127.0.0.1',
        '--port=0',
        '--metrics-host=127.0.0.1',
        '--metrics-port=0',
        '--health-port=0',
        '--config-dir=/var/config',
        '--master-secret-file=/var/secrets/mastersecret.json',
        '--pki-dir=/etc/kubernetes/pki',
        '--kubeconfig=/var/kubeconfig',
        `--api-server-endpoint=${new URL(k.apiServerUrl).host}`,
        '--instance-registry-url=http://127.0.0.1:9/',
      ]);
      expect(started.stderr).toBe('');
      expect(started.code).toBe(0);
      let logs = '';
      const serving = await waitFor(
        async () => {
          const running = (await podman.run(['inspect', '--format={{.State.Running}}', name])).stdout.toString();
          const result = await podman.run(['logs', name]);
          logs = `${result.stdout.toString()}${result.stderr}`;
          const entry = logs
            .split('\n')
            .filter((line) => line.startsWith('{'))
            .map((line) => JSON.parse(line) as Record<string, unknown>)
            .find((e) => e['message'] === 'joinservice serving');
          return entry ?? (running.trim() === 'true' ? undefined : 'exited');
        },
        { timeoutMs: 60_000, intervalMs: 250, description: 'the JoinService in the container to log that it serves' },
      ).catch((err: unknown) => {
        throw new Error(`${errorMessage(err)}; container output:\n${logs}`);
      });
      if (serving === 'exited') throw new Error(`the container exited before it served; its output:\n${logs}`);
      const client = new HealthClient(`127.0.0.1:${String(serving['healthPort'])}`, credentials.createInsecure());
      const status = await new Promise((resolveCheck, reject) => {
        client.check({ service: 'constellation.join.v1.JoinService' }, (err, res) => {
          if (err) reject(err);
          else resolveCheck(res);
        });
      });
      client.close();
      expect(status).toEqual({ status: HealthCheckResponse_ServingStatus.SERVING });
      // Node.js is PID 1: SIGTERM must reach the program and end it cleanly.
      expect((await podman.run(['stop', '--time=10', name])).code).toBe(0);
      const exit = await podman.run(['inspect', '--format={{.State.ExitCode}}', name]);
      expect(exit.stdout.toString().trim()).toBe('0');
    } finally {
      await podman.run(['rm', '--force', name]);
      await kubectl('delete', 'namespace', namespace, '--wait=false');
    }
  });
});
