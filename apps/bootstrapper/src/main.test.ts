import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runTypeScript, startSwtpm, tempDirForTest, useTestEkCa } from '@constellation/testing';
import { describe, expect, it } from 'vitest';

const entry = new URL('./main.ts', import.meta.url).pathname;
const run = (...args: string[]) => runTypeScript(entry, args, { timeoutMs: 30_000 });
const ekCa = useTestEkCa();

describe('constellation-bootstrapper entry point', () => {
  it('prints help with its defaults, and its version', async () => {
    const help = await run('--help');
    expect(help.code).toBe(0);
    const text = help.stdout.toString();
    expect(text).toContain('Usage: constellation-bootstrapper');
    expect(text).toContain('(default: 9000)');
    expect(text).toContain('--on-fatal <action>');
    const version = await run('--version');
    expect(version.stdout.toString()).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it('rejects unknown flags and bad values with exit code 2 naming them', async () => {
    const unknown = await run('--frobnicate');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--frobnicate'");
    const tpm = await run('--tpm', 'tcp://x');
    expect(tpm.code).toBe(2);
    expect(tpm.stderr).toContain(
      'expected a device path like /dev/tpmrm0, swtpm:<socket path> or swtpm:<host>:<port>, got "tcp://x"',
    );
    const level = await run('--log-level', 'loud');
    expect(level.stderr).toContain('Allowed choices are debug, info, warn, error');
    const kubelet = await run('--kubelet-start-command', 'systemctl start kubelet && touch /done');
    expect(kubelet.code).toBe(2);
    expect(kubelet.stderr).toContain('the shell operator && is not supported; put it in a script and name the script');
    const minimum = await run('--minimum-kubernetes-version', '1.33');
    expect(minimum.code).toBe(2);
    expect(minimum.stderr).toContain('Kubernetes version "1.33" from the command line does not look like v1.32.9');
    // An image whose own default is below its minimum could never init without naming a version.
    const floor = await run('--minimum-kubernetes-version', 'v1.33.0', '--default-kubernetes-version', 'v1.32.9');
    expect(floor.code).toBe(2);
    expect(floor.stderr).toContain(
      "--default-kubernetes-version: Kubernetes v1.32.9 is older than this node image's minimum v1.33.0 (downgrade refused)",
    );
  });

  it('refuses a --kube-proxy-config that kube-proxy would not take, naming the file and the field', async () => {
    const dir = await tempDirForTest();
    const file = join(dir, 'kube-proxy.yaml');
    await writeFile(file, 'mode: nftables\nconntrack:\n  maxPerCpu: 0\n');
    const base = ['--root', '/nonexistent-root', '--ek-roots', ekCa().rootCertPath, '--kube-proxy-config'];
    const unknown = await run(...base, file);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(`error: --kube-proxy-config: ${file}: unknown field "conntrack.maxPerCpu"`);
    await writeFile(file, 'mode: nft\n');
    const mode = await run(...base, file);
    expect(mode.code).toBe(2);
    expect(mode.stderr).toContain(`--kube-proxy-config: ${file}: field "mode" must be one of`);
    const missing = await run(...base, join(dir, 'none.yaml'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      `--kube-proxy-config: ENOENT: no such file or directory, open '${join(dir, 'none.yaml')}'`,
    );
    expect((await run('--help')).stdout.toString()).toContain('--kube-proxy-config <file>');
  });

  it('fails with a clear error and exit code 1 when the TPM cannot be reached, logging JSON', async () => {
    const result = await run(
      '--tpm',
      'swtpm:127.0.0.1:1',
      '--root',
      '/nonexistent-root',
      '--ek-roots',
      ekCa().rootCertPath,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: swtpm at 127\.0\.0\.1:1: connect ECONNREFUSED/);
    const first = JSON.parse(result.stdout.toString().split('\n')[0] ?? '') as Record<string, unknown>;
    expect(first).toMatchObject({ service: 'bootstrapper', message: 'bootstrapper starting', tpm: 'swtpm' });
  });

  it('refuses tpm2-ek without pinned EK roots, and a TPM without an EK certificate, saying what to do', async () => {
    const manufactured = await startSwtpm({ manufacture: { ca: ekCa(), vmid: 'node' } });
    const plain = await startSwtpm();
    try {
      const noRoots = await run(
        '--tpm',
        `swtpm:${manufactured.host}:${manufactured.port}`,
        '--root',
        '/nonexistent-root',
      );
      expect(noRoots.code).toBe(2);
      expect(noRoots.stderr).toContain(
        "--ek-roots is required with --attestation-variant=tpm2-ek: the node checks the JoinService's TPM identity against the pinned EK CA roots before it uses a join ticket",
      );
      const noCertificate = await run(
        '--tpm',
        `swtpm:${plain.host}:${plain.port}`,
        '--root',
        '/nonexistent-root',
        '--ek-roots',
        ekCa().rootCertPath,
      );
      expect(noCertificate.code).toBe(1);
      expect(noCertificate.stderr).toContain('has no RSA EK certificate (NV index 0x01c00002)');
      // A roots file that is not one is the user's to fix: exit code 2, naming the flag.
      const notRoots = await run('--root', '/nonexistent-root', '--ek-roots', '/etc/hostname');
      expect(notRoots.code).toBe(2);
      expect(notRoots.stderr).toContain('--ek-roots: /etc/hostname holds no PEM certificate');
    } finally {
      await manufactured.stop();
      await plain.stop();
    }
  });
});
