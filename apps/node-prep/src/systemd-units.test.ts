import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_INSTALL_DIRS, DEFAULT_SERIAL_PATH, DEFAULT_VERSION_RECORD_PATH } from '@constellation/node-prep';
import { repoRoot, requireProgram, runCommand, tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';

const deploy = join(repoRoot(), 'deploy', 'node-prep');

/** Verifies the node-prep unit and the kubelet drop-in (on a stub kubelet.service) with systemd-analyze. */
async function verify(prepUnit: string, dropIn: string): Promise<string> {
  await requireProgram('systemd-analyze', 'systemd');
  const dir = await tempDirForTest();
  const stub = join(dir, 'stub');
  await writeFile(stub, '#!/bin/sh\n', { mode: 0o755 });
  await writeFile(
    join(dir, 'constellation-node-prep.service'),
    prepUnit.replace('/usr/bin/constellation-node-prep', stub),
  );
  await writeFile(join(dir, 'kubelet.service'), `[Unit]\nDescription=kubelet\n[Service]\nExecStart=${stub}\n`);
  await mkdir(join(dir, 'kubelet.service.d'));
  await writeFile(join(dir, 'kubelet.service.d', '10-constellation.conf'), dropIn);
  const result = await runCommand(
    'systemd-analyze',
    ['verify', join(dir, 'constellation-node-prep.service'), join(dir, 'kubelet.service')],
    { timeoutMs: 30_000 },
  );
  return `${result.stdout.toString()}${result.stderr}`.trim();
}

describe('node preparation systemd units', async () => {
  const unit = await readFile(join(deploy, 'constellation-node-prep.service'), 'utf8');
  const dropIn = await readFile(join(deploy, 'kubelet.service.d', '10-constellation.conf'), 'utf8');

  it('pass systemd-analyze verify without a single complaint', async () => {
    expect(await verify(unit, dropIn)).toBe('');
  });

  it('run preparation once until kubelet.env exists, before the kubelet, restarting on failure', () => {
    expect(unit).toMatch(/^ConditionPathExists=!\/etc\/kubernetes\/kubelet\.env$/m);
    // Without the image's version seed it could only fail and retry forever: the bootstrapper prepares.
    expect(unit).toMatch(/^ConditionPathExists=\/etc\/kubernetes\/installer\/kubelet\.env$/m);
    expect(unit).toMatch(/^Before=kubelet\.service/m);
    expect(unit).toMatch(/^Restart=on-failure$/m);
  });

  it('run preparation with a private umask and a sandbox that leaves writable only what it writes', () => {
    expect(unit).toMatch(/^UMask=0077$/m);
    for (const line of [
      'ProtectSystem=strict',
      'NoNewPrivileges=yes',
      'PrivateTmp=yes',
      'ProtectHome=yes',
      'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6',
      'StateDirectory=constellation/node-prep',
    ])
      expect(unit.split('\n')).toContain(line);
    // Where preparation writes must stay writable, or the sandbox would break it.
    const writable = /^ReadWritePaths=(.*)$/m.exec(unit)?.[1]?.split(' ') ?? [];
    for (const path of ['/run', '-/etc/kubernetes', '-/opt/bin']) expect(writable).toContain(path);
    const writableDirs = [...writable.map((p) => p.replace(/^-/, '')), '/var/lib/constellation/node-prep'];
    for (const target of [
      ...DEFAULT_INSTALL_DIRS,
      DEFAULT_SERIAL_PATH,
      DEFAULT_VERSION_RECORD_PATH,
      '/etc/kubernetes/kubelet.env',
    ])
      expect(writableDirs.some((dir) => `${target}/`.startsWith(`${dir}/`))).toBe(true);
  });

  it('make the kubelet fail until kubelet.env exists (the environment file is not optional)', () => {
    expect(dropIn).toMatch(/^EnvironmentFile=\/etc\/kubernetes\/kubelet\.env$/m);
    expect(dropIn).toMatch(/^ExecStartPre=\/usr\/bin\/test -f \/etc\/kubernetes\/kubelet\.env$/m);
  });

  it('the check catches a broken drop-in (so the first test can fail)', async () => {
    expect(await verify(unit, dropIn.replace('EnvironmentFile=', 'EnvironmentFil='))).toContain(
      "Unknown key 'EnvironmentFil'",
    );
  });
});
