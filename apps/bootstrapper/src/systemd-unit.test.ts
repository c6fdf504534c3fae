import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot, requireProgram, runCommand, tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';

const unitPath = join(repoRoot(), 'deploy', 'bootstrapper', 'constellation-bootstrapper.service');

/** systemd-analyze verify also checks that ExecStart exists, so the binary is replaced by a stub. */
async function verify(unit: string): Promise<string> {
  await requireProgram('systemd-analyze', 'systemd');
  const dir = await tempDirForTest();
  const stub = join(dir, 'stub');
  await writeFile(stub, '#!/bin/sh\n', { mode: 0o755 });
  const file = join(dir, 'constellation-bootstrapper.service');
  await writeFile(file, unit.replace('/usr/bin/constellation-bootstrapper', stub));
  const result = await runCommand('systemd-analyze', ['verify', file], { timeoutMs: 30_000 });
  return `${result.stdout.toString()}${result.stderr}`.trim();
}

describe('bootstrapper systemd unit', () => {
  it('passes systemd-analyze verify without a single complaint', async () => {
    expect(await verify(await readFile(unitPath, 'utf8'))).toBe('');
  });

  it('restarts on failure and is ordered before the kubelet', async () => {
    const unit = await readFile(unitPath, 'utf8');
    expect(unit).toMatch(/^Restart=on-failure$/m);
    expect(unit).toMatch(/^Before=kubelet\.service$/m);
  });

  it('the check catches a broken unit (so the test above can fail)', async () => {
    const broken = (await readFile(unitPath, 'utf8')).replace('RestartSec=5s', 'RestartSec=banana');
    expect(await verify(broken)).toMatch(/Failed to parse sec value/);
  });
});
