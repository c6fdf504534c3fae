import { cp, lstat, mkdir, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createTempDir, requireProgram, runChecked, runCommand } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildExecutable } from './executable.js';
import { NODE_PACKAGE_NAME, NODE_UNITS, buildNodePackage } from './node-package.js';
import { BOOTSTRAPPER, NODE_PREP } from './programs.js';
import { repoRoot } from './release-layout.js';

// The executables are cached between runs (see executable.ts); the package is built fresh.
const executablesDir = join(repoRoot, '.tmp', 'packaging-test', 'node-package');

/**
 * A root file system like a Debian node image's before the package is installed: merged /usr,
 * systemd's own units (copied from this machine), an empty dpkg database, and stand-ins for the
 * kubelet and coreutils' test that the kubelet drop-in refers to.
 */
async function scratchRoot(path: string): Promise<void> {
  await mkdir(join(path, 'usr', 'bin'), { recursive: true });
  await mkdir(join(path, 'usr', 'lib', 'systemd'), { recursive: true });
  await symlink('usr/lib', join(path, 'lib'));
  await symlink('usr/bin', join(path, 'bin'));
  await cp('/usr/lib/systemd/system', join(path, 'usr', 'lib', 'systemd', 'system'), {
    recursive: true,
    verbatimSymlinks: true,
  });
  for (const dir of ['info', 'updates', 'triggers'])
    await mkdir(join(path, 'var', 'lib', 'dpkg', dir), { recursive: true });
  await writeFile(join(path, 'var', 'lib', 'dpkg', 'status'), '');
  await writeFile(join(path, 'var', 'lib', 'dpkg', 'available'), '');
  for (const stub of ['kubelet', 'test'])
    await writeFile(join(path, 'usr', 'bin', stub), '#!/bin/sh\n', { mode: 0o755 });
  await writeFile(
    join(path, 'usr', 'lib', 'systemd', 'system', 'kubelet.service'),
    '[Unit]\nDescription=kubelet stand-in\n[Service]\nExecStart=/usr/bin/kubelet\n[Install]\nWantedBy=multi-user.target\n',
  );
}

/** dpkg into `root` without chroot (the scratch root has no shell); scripts honour DPKG_ROOT. */
async function dpkg(root: string, ...args: string[]): Promise<void> {
  await runChecked(
    'dpkg',
    [`--root=${root}`, '--force-depends', '--force-script-chrootless', '--log=/dev/null', ...args],
    { timeoutMs: 120_000 },
  );
}

describe('the node package', () => {
  let dir: TempDir;
  let deb: string;

  beforeAll(async () => {
    await requireProgram('dpkg-deb', 'dpkg');
    dir = await createTempDir('constellation-deb-');
    deb = await buildNodePackage(
      {
        bootstrapper: await buildExecutable(BOOTSTRAPPER, executablesDir),
        nodePrep: await buildExecutable(NODE_PREP, executablesDir),
      },
      join(dir.path, 'release'),
    );
  }, 300_000);

  afterAll(async () => {
    await dir.remove();
  });

  it('holds the executables, the units and the kubelet drop-in at the standard paths', async () => {
    const listing = (await runChecked('dpkg-deb', ['--contents', deb], { timeoutMs: 60_000 })).stdout.toString();
    const files = listing
      .split('\n')
      .filter((line) => line.startsWith('-'))
      .map((line) => `${line.split(/\s+/)[0] ?? ''} ${line.split(/\s+/)[5] ?? ''}`);
    expect(files).toEqual(
      expect.arrayContaining([
        '-rwxr-xr-x ./usr/bin/constellation-bootstrapper',
        '-rwxr-xr-x ./usr/bin/constellation-node-prep',
        '-rw-r--r-- ./lib/systemd/system/constellation-bootstrapper.service',
        '-rw-r--r-- ./lib/systemd/system/constellation-node-prep.service',
        '-rw-r--r-- ./lib/systemd/system/kubelet.service.d/10-constellation.conf',
      ]),
    );
    expect(listing).toMatch(/ root\/root /);
  });

  it('passes lintian without errors', async () => {
    await requireProgram('lintian', 'lintian');
    const result = await runCommand('lintian', ['--no-cfg', '--fail-on', 'error', deb], { timeoutMs: 240_000 });
    const output = result.stdout.toString();
    expect(output.split('\n').filter((line) => line.startsWith('E:'))).toEqual([]);
    expect(result.code).toBe(0);
  });

  it('installs into a scratch root, enables its units, and they pass systemd-analyze verify there', async () => {
    await requireProgram('systemd-analyze', 'systemd');
    const root = join(dir.path, 'root');
    await scratchRoot(root);
    await dpkg(root, '--install', deb);
    for (const unit of NODE_UNITS) {
      const wants = join(root, 'etc', 'systemd', 'system', 'multi-user.target.wants', unit);
      expect(await readlink(wants)).toBe(`/lib/systemd/system/${unit}`);
    }
    const verify = await runCommand('systemd-analyze', ['verify', `--root=${root}`, ...NODE_UNITS, 'kubelet.service'], {
      timeoutMs: 60_000,
    });
    expect(`${verify.stdout.toString()}${verify.stderr}`.trim()).toBe('');
    expect(verify.code).toBe(0);

    // The check sees the installed files: without the executable, the unit fails verification.
    await runChecked('mv', [join(root, 'usr/bin/constellation-node-prep'), join(dir.path, 'moved')], {
      timeoutMs: 10_000,
    });
    const broken = await runCommand(
      'systemd-analyze',
      ['verify', `--root=${root}`, 'constellation-node-prep.service'],
      {
        timeoutMs: 60_000,
      },
    );
    expect(broken.stderr).toContain('Command /usr/bin/constellation-node-prep is not executable');
    await runChecked('mv', [join(dir.path, 'moved'), join(root, 'usr/bin/constellation-node-prep')], {
      timeoutMs: 10_000,
    });

    // Removal masks the units (their files are gone); purge forgets them entirely.
    await dpkg(root, '--remove', NODE_PACKAGE_NAME);
    for (const unit of NODE_UNITS) {
      expect(await readlink(join(root, 'etc', 'systemd', 'system', unit))).toBe('/dev/null');
    }
    await dpkg(root, '--purge', NODE_PACKAGE_NAME);
    for (const unit of NODE_UNITS) {
      for (const path of [join('multi-user.target.wants', unit), unit]) {
        await expect(lstat(join(root, 'etc', 'systemd', 'system', path))).rejects.toThrow('ENOENT');
      }
    }
  });
});
