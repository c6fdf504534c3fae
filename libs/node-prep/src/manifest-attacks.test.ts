import { chmod, chown, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { signingKey, testNode } from './node-prep.fixture.js';
import type { SigningKey } from './node-prep.fixture.js';
import { prepareNode } from './node-preparation.js';

let trusted: SigningKey;
let rotated: SigningKey;
let attacker: SigningKey;
beforeAll(async () => {
  [trusted, rotated, attacker] = await Promise.all([
    signingKey('release'),
    signingKey('release-2'),
    signingKey('attacker'),
  ]);
});

describe('attacks on the signed component manifest', () => {
  it('rollback: an older, validly signed manifest is refused once a newer one was accepted', async () => {
    const node = await testNode(trusted);
    await prepareNode(node.options);
    // The attacker replays serial 9, which lists a vulnerable kubelet.
    await node.publish((m) => (m['serial'] = 9));
    await expect(prepareNode(node.options)).rejects.toThrow(
      /has serial 9, older than serial 10 this node already accepted \(rollback refused\)/,
    );
    // The same serial again is no rollback (a second run), and a newer one raises the floor.
    await node.publish();
    await expect(prepareNode(node.options)).resolves.toMatchObject({ kubernetesVersion: 'v1.37.2' });
    await node.publish((m) => (m['serial'] = 11));
    await prepareNode(node.options);
    expect(await readFile(join(node.root, 'var/lib/constellation/node-prep/highest-manifest-serial'), 'utf8')).toBe(
      '11\n',
    );
  });

  it('a damaged or planted serial record stops preparation instead of resetting the floor', async () => {
    const node = await testNode(trusted);
    const record = join(node.root, 'var/lib/constellation/node-prep/highest-manifest-serial');
    await mkdir(join(node.root, 'var/lib/constellation/node-prep'), { recursive: true });
    await writeFile(record, 'garbage');
    await expect(prepareNode(node.options)).rejects.toThrow(/manifest serial record .* is damaged/);
    await writeFile(record, '1\n', { mode: 0o666 });
    await chmod(record, 0o666);
    await expect(prepareNode(node.options)).rejects.toThrow(/must not be group- or world-writable/);
  });

  it('freeze: an expired manifest is refused', async () => {
    const node = await testNode(trusted);
    await node.publish((m) => (m['expires'] = '2020-01-01T00:00:00Z'));
    await expect(prepareNode(node.options)).rejects.toThrow(
      /expired at 2020-01-01T00:00:00\.000Z \(stale metadata refused: freeze protection\)/,
    );
    expect(await node.exists('run/state/bin/kubelet')).toBe(false);
  });

  it.each([
    ['board', 'arm64-usr', /is for board arm64-usr, this node needs amd64-usr \(mix-and-match refused\)/],
    ['osVersion', '3700.0.0', /is for OS version 3700\.0\.0, this node needs 3815\.2\.0 \(mix-and-match refused\)/],
    [
      'kubernetesVersion',
      'v1.36.0',
      /is for Kubernetes v1\.36\.0, this node needs v1\.37\.2 \(mix-and-match refused\)/,
    ],
  ])('mix-and-match: a manifest signed for another %s is refused', async (field, value, message) => {
    const node = await testNode(trusted);
    await node.publish((m) => (m[field] = value));
    await expect(prepareNode(node.options)).rejects.toThrow(message);
  });

  it('a v1 manifest (no serial, no expiry, no target) is refused by its kind', async () => {
    const node = await testNode(trusted);
    await node.publish((m) => {
      m['kind'] = 'constellation-component-manifest-v1';
      delete m['serial'];
      delete m['expires'];
    });
    await expect(prepareNode(node.options)).rejects.toThrow(/component manifest field kind: /);
  });

  it('a signature made in 2020 by a key that expired in 2020 is refused today', async () => {
    const old = await signingKey('old-release', {
      created: new Date('2020-01-01T00:00:00Z'),
      lifetimeSeconds: 86_400 * 30,
    });
    // Signed while the key was valid; openpgp alone would accept it, judging the key at signing time.
    const node = await testNode({
      publicKey: old.publicKey,
      sign: (data) => old.sign(data, new Date('2020-01-02T00:00:00Z')),
    });
    await expect(prepareNode(node.options)).rejects.toThrow(
      /not signed by the pinned keyring: .*key [0-9a-f]{16} made the signature but is not valid now: .*expired/i,
    );
  });

  it('a world-writable keyring is refused (an attacker could prepend their own key)', async () => {
    const node = await testNode(trusted);
    const keyring = join(node.root, 'etc/pubring.asc');
    await writeFile(keyring, `${attacker.publicKey}\n${trusted.publicKey}`);
    await chmod(keyring, 0o666);
    await node.publish(undefined, attacker);
    await expect(prepareNode(node.options)).rejects.toThrow(
      /pinned keyring .*pubring\.asc has mode 0666; it must not be group- or world-writable/,
    );
    await chmod(keyring, 0o664);
    await expect(prepareNode(node.options)).rejects.toThrow(/has mode 0664/);
  });

  it('a keyring owned by another user, or a symlink, is refused', async () => {
    const node = await testNode(trusted);
    const keyring = join(node.root, 'etc/pubring.asc');
    await chown(keyring, 4242, 4242);
    await expect(prepareNode(node.options)).rejects.toThrow(/pinned keyring .* is owned by uid 4242, not root/);
    await chown(keyring, 0, 0);
    await writeFile(join(node.root, 'etc/other.asc'), trusted.publicKey);
    await prepareNode({ ...node.options, keyringPath: '/etc/other.asc' });
    await symlink(join(node.root, 'etc/other.asc'), join(node.root, 'etc/link.asc'));
    await expect(prepareNode({ ...node.options, keyringPath: '/etc/link.asc' })).rejects.toThrow(
      /pinned keyring .*link\.asc is a symbolic link/,
    );
  });

  it('key rotation: a keyring of two armored blocks accepts a manifest signed with the second key', async () => {
    const node = await testNode(trusted);
    await writeFile(join(node.root, 'etc/pubring.asc'), `${trusted.publicKey}\n${rotated.publicKey}`);
    await node.publish(undefined, rotated);
    await expect(prepareNode(node.options)).resolves.toMatchObject({ installed: true });
    await writeFile(
      join(node.root, 'etc/pubring.asc'),
      `${trusted.publicKey}\n-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nbroken\n-----END PGP PUBLIC KEY BLOCK-----\n`,
    );
    await expect(prepareNode(node.options)).rejects.toThrow(/key block 2 of 2 cannot be read/);
  });
});
