/**
 * Weaknesses of node preparation found by a red-team pass, each shown by its test on the code
 * before the fix: a truncated component installed as verified (F1), a revocation that did not
 * count (F2), a kept component's mode (F3), credentials logged from a mirror URL (F4).
 */
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as openpgp from 'openpgp';
import { beforeAll, describe, expect, it } from 'vitest';
import { componentsOf, sha256, signingKey, smallBinDirectory, testNode } from './node-prep.fixture.js';
import type { SigningKey } from './node-prep.fixture.js';
import { prepareNode } from './node-preparation.js';

let trusted: SigningKey;
beforeAll(async () => {
  trusted = await signingKey('release');
});

describe('node preparation under attack', () => {
  it('F1: a short write on a nearly full disk must not install a truncated component as "verified" (real tmpfs; needs mount rights)', async (context) => {
    const node = await testNode(trusted);
    const bin = await smallBinDirectory(node, (why) => context.skip(why));
    // 48 KiB free; the 56 KiB kubelet arrives as one chunk, so write(2) is short and never fails.
    await writeFile(join(bin, 'other-file'), Buffer.alloc(16 * 1024, 'f'));
    const kubelet = Buffer.alloc(56 * 1024, 'k');
    node.host.routes.set('/pkgs/kubelet', (_req, res) => res.end(kubelet));
    await node.publish((m) => {
      componentsOf(m)[0]!['hash'] = sha256(kubelet);
      componentsOf(m)[0]!['size'] = kubelet.length;
      componentsOf(m)[1]!['installPath'] = '/opt/bin/kubeadm';
    });
    const outcome = await prepareNode(node.options).then(
      () => 'prepared',
      (err: unknown) => String(err),
    );
    const installed = await readFile(join(bin, 'kubelet')).catch(() => undefined);
    const state = {
      outcome,
      installedBytes: installed?.length,
      installedDigestMatches: installed === undefined ? undefined : sha256(installed) === sha256(kubelet),
      kubeletEnvWritten: await node.exists('etc/kubernetes/kubelet.env'),
    };
    // Secure: the run fails (the partial write is an error), nothing is installed, no marker.
    // Before: FileHandle.write's bytesWritten was ignored, a truncated kubelet was renamed into
    // place and kubelet.env (the "done" marker) written, so the unit never ran again.
    expect(state).toEqual({
      outcome: expect.stringMatching(/component kubelet .*cannot be written: ENOSPC/) as unknown,
      installedBytes: undefined,
      installedDigestMatches: undefined,
      kubeletEnvWritten: false,
    });
  });

  it('F2: a revoked key must stay revoked when the keyring also holds an older copy of it (rotation by appending)', async () => {
    const generated = await openpgp.generateKey({
      type: 'curve25519',
      userIDs: [{ name: 'old-release' }],
      format: 'armored',
    });
    const stolen = await openpgp.readPrivateKey({ armoredKey: generated.privateKey });
    const revoked = await openpgp.revokeKey({
      key: stolen,
      reasonForRevocation: { string: 'key compromised' },
      format: 'armored',
    });
    // The attacker holds the compromised (now revoked) key and serves a manifest it signed.
    const node = await testNode({
      publicKey: generated.publicKey,
      sign: async (data) => {
        // openpgp's return type names web-stream types outside our lib set; armored output is a string.
        const signature = (await openpgp.sign({
          message: await openpgp.createMessage({ binary: data }),
          signingKeys: stolen,
          detached: true,
          format: 'armored',
        })) as unknown as string;
        return signature;
      },
    });
    // The operator appended the revoked key's export after the old block, as rotation is done.
    await writeFile(join(node.root, 'etc/pubring.asc'), `${generated.publicKey}\n${revoked.publicKey}`);
    const outcome = await prepareNode(node.options).then(
      () =>
        'accepted a manifest signed by a revoked key (keyring.ts keeps duplicate keys apart; the first copy, without the revocation, wins)',
      (err: unknown) => String(err),
    );
    expect(outcome).toMatch(/not signed by the pinned keyring: .*revoked/);
    expect(await node.exists('run/state/bin/kubelet')).toBe(false);
  });

  it('F3: a component kept "by digest" must still get the manifest\'s mode (no setuid bit, executable)', async () => {
    const node = await testNode(trusted);
    const bin = join(node.root, 'run/state/bin');
    await mkdir(bin, { recursive: true });
    await writeFile(join(bin, 'kubelet'), node.kubelet);
    await chmod(join(bin, 'kubelet'), 0o4755); // setuid root, right digest
    await writeFile(join(bin, 'kubeadm'), node.kubeadm);
    await chmod(join(bin, 'kubeadm'), 0o600); // not executable, right digest
    await prepareNode(node.options);
    const modes = {
      kubelet: ((await stat(join(bin, 'kubelet'))).mode & 0o7777).toString(8),
      kubeadm: ((await stat(join(bin, 'kubeadm'))).mode & 0o7777).toString(8),
    };
    expect(
      modes,
      'existing-component.ts returns "keep" on digest alone; the manifest mode (default 0755) is never applied',
    ).toEqual({
      kubelet: '755',
      kubeadm: '755',
    });
  });

  it('F4: credentials in the mirror URL (userinfo or a presigned query) must not be logged', async () => {
    const node = await testNode(trusted);
    const withCredentials = node.host.url.replace('http://', 'http://mirror-user:s3cr3t-token@');
    await prepareNode({
      ...node.options,
      manifestUrlTemplate: `${withCredentials}/manifests/{{.Board}}/{{.OSVersion}}/{{.KubernetesVersion}}.json?X-Amz-Signature=presigned-secret`,
    }).catch(() => undefined);
    const logged = JSON.stringify(node.logger.entries);
    expect(logged).not.toContain('s3cr3t-token');
    expect(logged).not.toContain('presigned-secret');
  });
});
