import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { MemoryLogger } from '@constellation/logger/testing';
import { tempDirForTest } from '@constellation/testing';
import * as openpgp from 'openpgp';
import { onTestFinished } from 'vitest';
import { MANIFEST_KIND } from './component-manifest.js';
import type { NodePreparationOptions } from './node-preparation.js';

/** A real OpenPGP signing key; `created`/`lifetimeSeconds` make keys that expired long ago. */
export interface SigningKey {
  publicKey: string;
  sign: (data: Buffer, at?: Date) => Promise<string>;
}

export async function signingKey(
  name: string,
  validity: { created?: Date; lifetimeSeconds?: number } = {},
): Promise<SigningKey> {
  const { privateKey, publicKey } = await openpgp.generateKey({
    type: 'curve25519',
    userIDs: [{ name, email: `${name}@example.invalid` }],
    format: 'armored',
    ...(validity.created === undefined ? {} : { date: validity.created }),
    ...(validity.lifetimeSeconds === undefined ? {} : { keyExpirationTime: validity.lifetimeSeconds }),
  });
  const key = await openpgp.readPrivateKey({ armoredKey: privateKey });
  return {
    publicKey,
    sign: async (data, at) => {
      // openpgp's return type names web-stream types outside our lib set; armored output is a string.
      const signature = (await openpgp.sign({
        message: await openpgp.createMessage({ binary: data }),
        signingKeys: key,
        detached: true,
        format: 'armored',
        date: at ?? new Date(),
      })) as unknown as string;
      return signature;
    },
  };
}

export type Route = (req: IncomingMessage, res: ServerResponse) => void;

/** Serves a directory over HTTP on 127.0.0.1:0, recording requests; `routes` override paths, `failFirst` answers 503 first. */
export interface ArtifactHost {
  url: string;
  requests: string[];
  failFirst: Map<string, number>;
  routes: Map<string, Route>;
}

export async function artifactHost(dir: string): Promise<ArtifactHost> {
  const requests: string[] = [];
  const failFirst = new Map<string, number>();
  const routes = new Map<string, Route>();
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    requests.push(path);
    const remaining = failFirst.get(path) ?? 0;
    if (remaining > 0) {
      failFirst.set(path, remaining - 1);
      res.writeHead(503).end();
      return;
    }
    const route = routes.get(path);
    if (route !== undefined) {
      route(req, res);
      return;
    }
    readFile(join(dir, path)).then(
      (body) => res.writeHead(200).end(body),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  );
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, requests, failFirst, routes };
}

export const sha256 = (b: Buffer | string): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

export const MANIFEST_PATH = '/manifests/amd64-usr/3815.2.0/v1.37.2.json';

export interface TestNode {
  root: string;
  site: string;
  host: ArtifactHost;
  options: NodePreparationOptions;
  logger: MemoryLogger;
  reboots: () => number;
  kubelet: Buffer;
  kubeadm: Buffer;
  /** The manifest as JSON: for v1.37.2 on amd64-usr 3815.2.0, serial 10, kubelet and kubeadm. */
  manifest: Record<string, unknown>;
  /** Writes `manifest` (changed by `change`) and its signature by `key` (none: unsigned). */
  publish: (change?: (m: Record<string, unknown>) => void, key?: SigningKey | 'none') => Promise<Buffer>;
  exists: (path: string) => Promise<boolean>;
}

/** A node root (os-release, seed, keyring of `trusted`) and an artifact host with a signed manifest. */
export async function testNode(trusted: SigningKey): Promise<TestNode> {
  const root = await tempDirForTest();
  const site = await tempDirForTest();
  const host = await artifactHost(site);
  await mkdir(join(root, 'usr/lib'), { recursive: true });
  await writeFile(join(root, 'usr/lib/os-release'), 'NAME="Node OS"\nVERSION_ID=3815.2.0\nCOREOS_BOARD=amd64-usr\n');
  await mkdir(join(root, 'etc/kubernetes/installer'), { recursive: true });
  await writeFile(
    join(root, 'etc/kubernetes/installer/kubelet.env'),
    'KUBELET_IMAGE_URL=registry.example/kubelet\nKUBELET_IMAGE_TAG=v1.36.0_node.1\n',
  );
  await writeFile(join(root, 'etc/pubring.asc'), trusted.publicKey, { mode: 0o644 });
  const kubelet = Buffer.from('#!/bin/sh\necho kubelet v1.37.2\n');
  const kubeadm = Buffer.from('#!/bin/sh\necho kubeadm v1.37.2\n');
  await mkdir(join(site, 'pkgs'), { recursive: true });
  await writeFile(join(site, 'pkgs/kubelet'), kubelet);
  await writeFile(join(site, 'pkgs/kubeadm'), kubeadm);
  await mkdir(join(site, 'manifests/amd64-usr/3815.2.0'), { recursive: true });
  const manifest: Record<string, unknown> = {
    kind: MANIFEST_KIND,
    serial: 10,
    expires: new Date(Date.now() + 86_400_000).toISOString(),
    board: 'amd64-usr',
    osVersion: '3815.2.0',
    kubernetesVersion: 'v1.37.2',
    components: [
      {
        name: 'kubelet',
        url: `${host.url}/pkgs/kubelet`,
        hash: sha256(kubelet),
        size: kubelet.length,
        installPath: '/run/state/bin/kubelet',
      },
      {
        name: 'kubeadm',
        url: `${host.url}/pkgs/kubeadm`,
        hash: sha256(kubeadm),
        size: kubeadm.length,
        installPath: '/run/state/bin/kubeadm',
      },
    ],
  };
  const publish = async (change?: (m: Record<string, unknown>) => void, key: SigningKey | 'none' = trusted) => {
    const copy = structuredClone(manifest);
    change?.(copy);
    const bytes = Buffer.from(JSON.stringify(copy));
    await writeFile(join(site, MANIFEST_PATH), bytes);
    if (key === 'none') await rm(join(site, `${MANIFEST_PATH}.asc`), { force: true });
    else await writeFile(join(site, `${MANIFEST_PATH}.asc`), await key.sign(bytes));
    return bytes;
  };
  await publish();
  const logger = new MemoryLogger();
  let reboots = 0;
  const options: NodePreparationOptions = {
    root,
    osReleasePath: '/usr/lib/os-release',
    forcedVersion: 'v1.37.2',
    seedFile: '/etc/kubernetes/installer/kubelet.env',
    manifestUrlTemplate: `${host.url}/manifests/{{.Board}}/{{.OSVersion}}/{{.KubernetesVersion}}.json`,
    verifySignatures: true,
    keyringPath: '/etc/pubring.asc',
    kubeletEnvPath: '/etc/kubernetes/kubelet.env',
    reboot: () => {
      reboots++;
      return Promise.resolve();
    },
    retry: { tries: 3, pauseMs: 10, timeoutMs: 10_000 },
    apiRetry: { tries: 2, pauseMs: 10, timeoutMs: 5_000 },
    logger,
  };
  const exists = (path: string): Promise<boolean> =>
    readFile(join(root, path)).then(
      () => true,
      () => false,
    );
  return { root, site, host, options, logger, reboots: () => reboots, kubelet, kubeadm, manifest, publish, exists };
}

/** The manifest's components, to change in a `publish` callback. */
export const componentsOf = (m: Record<string, unknown>): Record<string, unknown>[] =>
  m['components'] as Record<string, unknown>[];

/**
 * Mounts a 64 KiB tmpfs over the node's `run/state/bin` (unmounted when the test ends) and
 * returns its path: a nearly full disk, for real. Where mounting is not allowed, `skip` is called.
 */
export async function smallBinDirectory(node: TestNode, skip: (why: string) => void): Promise<string> {
  const bin = join(node.root, 'run/state/bin');
  await mkdir(bin, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', bin], { stdio: 'ignore' });
  } catch {
    skip('cannot mount a tmpfs here');
  }
  onTestFinished(() => {
    execFileSync('umount', [bin]);
  });
  return bin;
}
