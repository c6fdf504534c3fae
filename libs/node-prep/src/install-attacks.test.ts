import { execFileSync } from 'node:child_process';
import { chown, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDirForTest, withTimeout } from '@constellation/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { artifactHost, componentsOf, sha256, signingKey, smallBinDirectory, testNode } from './node-prep.fixture.js';
import type { SigningKey } from './node-prep.fixture.js';
import { prepareNode } from './node-preparation.js';

let trusted: SigningKey;
beforeAll(async () => {
  trusted = await signingKey('release');
});

const kubeletOf = (m: Record<string, unknown>): Record<string, unknown> => componentsOf(m)[0]!;
const leftovers = async (dir: string): Promise<string[]> =>
  (await readdir(dir).catch(() => [])).filter((name) => name.endsWith('.tmp') || name.endsWith('.partial'));

describe('install paths chosen by the manifest', () => {
  it.each([
    ['the kubelet.env marker', '/etc/kubernetes/kubelet.env'],
    ['the keyring', '/etc/pubring.asc'],
    ['the seed', '/etc/kubernetes/installer/kubelet.env'],
    ['the serial record', '/var/lib/constellation/node-prep/highest-manifest-serial'],
  ])('refuses to replace %s, even when its directory is allowed', async (_what, path) => {
    const node = await testNode(trusted);
    await node.publish((m) => (kubeletOf(m)['installPath'] = path));
    await expect(
      prepareNode({ ...node.options, allowedInstallDirs: ['/etc', '/var', '/run/state/bin'] }),
    ).rejects.toThrow(`component kubelet would replace ${path}, which node preparation protects`);
    expect(await node.exists('run/state/bin/kubeadm')).toBe(false);
  });

  it('refuses paths outside the allowed directories', async () => {
    const node = await testNode(trusted);
    await node.publish((m) => (kubeletOf(m)['installPath'] = '/usr/bin/kubelet'));
    await expect(prepareNode(node.options)).rejects.toThrow(
      'component kubelet installs to /usr/bin/kubelet, outside the allowed directories /run/state/bin, /opt/bin',
    );
  });

  it('refuses a parent directory that is a symlink to outside the root, writing nothing there', async () => {
    const node = await testNode(trusted);
    const outside = await tempDirForTest();
    await mkdir(join(node.root, 'run/state'), { recursive: true });
    await symlink(outside, join(node.root, 'run/state/bin'));
    await expect(prepareNode(node.options)).rejects.toThrow(
      /directory \/run\/state\/bin leads to .*, outside the root/,
    );
    expect(await readdir(outside)).toEqual([]);
  });

  it('refuses a symlink at the destination and never writes through it', async () => {
    const node = await testNode(trusted);
    const outside = join(await tempDirForTest(), 'victim');
    await writeFile(outside, 'victim\n');
    await mkdir(join(node.root, 'run/state/bin'), { recursive: true });
    await symlink(outside, join(node.root, 'run/state/bin/kubelet'));
    await expect(prepareNode(node.options)).rejects.toThrow(/run\/state\/bin\/kubelet exists and is a symbolic link/);
    expect(await readFile(outside, 'utf8')).toBe('victim\n');
  });

  it('refuses a FIFO at the destination without hanging', async () => {
    const node = await testNode(trusted);
    await mkdir(join(node.root, 'run/state/bin'), { recursive: true });
    execFileSync('mkfifo', [join(node.root, 'run/state/bin/kubelet')]);
    await expect(withTimeout(prepareNode(node.options), 10_000, 'preparation with a FIFO')).rejects.toThrow(
      /run\/state\/bin\/kubelet exists and is not a regular file/,
    );
  });

  it('refuses a file at the destination owned by another user, even with the right digest', async () => {
    const node = await testNode(trusted);
    await mkdir(join(node.root, 'run/state/bin'), { recursive: true });
    await writeFile(join(node.root, 'run/state/bin/kubelet'), node.kubelet);
    await chown(join(node.root, 'run/state/bin/kubelet'), 4242, 4242);
    await expect(prepareNode(node.options)).rejects.toThrow(/kubelet exists and is owned by uid 4242, not root/);
  });
});

describe('downloads', () => {
  it('stops an endless body at the manifest size, and removes the partial file', async () => {
    const node = await testNode(trusted);
    let sent = 0;
    node.host.routes.set('/pkgs/kubelet', (_req, res) => {
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = (): void => {
        while (res.write(chunk)) {
          sent += chunk.length;
          if (sent > 512 * 1024 * 1024) return; // the bound this test guards against
        }
        res.once('drain', pump);
      };
      pump();
    });
    await expect(withTimeout(prepareNode(node.options), 20_000, 'an endless download')).rejects.toThrow(
      /^component kubelet \(http:.*\): the download is larger than the manifest's size of 31 bytes$/,
    );
    expect(sent).toBeLessThan(16 * 1024 * 1024);
    expect(await leftovers(join(node.root, 'run/state/bin'))).toEqual([]);
    expect(await node.exists('run/state/bin/kubelet')).toBe(false);
  });

  it('refuses a manifest whose size exceeds the cap', async () => {
    const node = await testNode(trusted);
    await node.publish((m) => (kubeletOf(m)['size'] = 8 * 1024 * 1024 * 1024));
    await expect(prepareNode(node.options)).rejects.toThrow(/field components\.0\.size: /);
  });

  it('follows a redirect to the same origin and refuses one to another host', async () => {
    const node = await testNode(trusted);
    const other = await artifactHost(node.site);
    node.host.routes.set('/pkgs/kubelet', (_req, res) => res.writeHead(302, { location: '/pkgs/real-kubelet' }).end());
    node.host.routes.set('/pkgs/real-kubelet', (_req, res) => res.end(node.kubelet));
    await prepareNode(node.options);
    const fresh = await testNode(trusted);
    fresh.host.routes.set('/pkgs/kubelet', (_req, res) =>
      res.writeHead(302, { location: `${other.url}/pkgs/kubelet` }).end(),
    );
    await expect(prepareNode(fresh.options)).rejects.toThrow(
      /^component kubelet \(http:.*\): redirect to another origin \(http:\/\/127\.0\.0\.1:\d+\) refused/,
    );
    expect(other.requests).toEqual([]);
  });

  it('refuses file:// component URLs and never reveals the digest of a local file', async () => {
    const node = await testNode(trusted);
    const secret = join(node.root, 'etc/shadow');
    await writeFile(secret, 'root:$6$secret:19000:0:99999:7:::\n');
    await node.publish((m) => (kubeletOf(m)['url'] = `file://${secret}`));
    const error = await prepareNode(node.options).catch((err: unknown) => String(err));
    expect(error).toMatch(/field components\.0\.url: must be an http\(s\) URL/);
    expect(error).not.toContain(sha256(await readFile(secret)).slice('sha256:'.length));
  });

  it('gives up at one overall deadline, whatever the number of tries', async () => {
    const node = await testNode(trusted);
    node.host.routes.set('/pkgs/kubelet', () => undefined); // accepts, never answers
    const started = Date.now();
    await expect(
      withTimeout(
        prepareNode({ ...node.options, retry: { tries: 50, pauseMs: 10, timeoutMs: 700 } }),
        10_000,
        'deadline',
      ),
    ).rejects.toThrow(/^component kubelet \(http:.*\) failed after 1 tries: no answer within the deadline of 700 ms/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('leaves no temporary file behind on a full disk, however often it is retried (real tmpfs; needs mount rights)', async (context) => {
    const node = await testNode(trusted);
    const bin = await smallBinDirectory(node, (why) => context.skip(why));
    const big = Buffer.alloc(512 * 1024, 'k');
    node.host.routes.set('/pkgs/kubelet', (_req, res) => res.end(big));
    await node.publish((m) => {
      kubeletOf(m)['hash'] = sha256(big);
      kubeletOf(m)['size'] = big.length;
    });
    for (let run = 0; run < 3; run++)
      await expect(prepareNode(node.options)).rejects.toThrow(
        /^component kubelet \(http:.*\): cannot be written: ENOSPC$/,
      );
    expect(await readdir(bin)).toEqual([]);
  });
});
