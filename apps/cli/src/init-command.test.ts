import { spawn } from 'node:child_process';
import { readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { componentDigest, expectedMeasurements, measureBoot } from '@constellation/attestation';
import { hashInitSecret } from '@constellation/keys';
import { MetadataServer } from '@constellation/instance-metadata';
import { repoRoot, startSwtpm, tempDirForTest, useTestEkCa, waitFor, withTimeout } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { describe, expect, it } from 'vitest';
import { configYaml } from './constellation-conf.js';
import { runInit } from './init-command.js';
import { workspaceFiles, writeWorkspaceFile } from './workspace.js';
import { errorMessage } from '@constellation/errors';

const root = repoRoot();
const bundle = join(root, 'apps/bootstrapper/dist/bootstrapper.mjs');
const BOOT = [{ pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bundle v1') }];
const ekCa = useTestEkCa();

describe('constellation init', () => {
  it('refuses a node whose measurements differ from the config before sending any secret', async () => {
    const dir = await tempDirForTest();
    const swtpm = await startSwtpm({ manufacture: { ca: ekCa(), vmid: 'cp' } });
    const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
    await measureBoot(tpm, BOOT);
    await tpm.close();
    const metadata = await MetadataServer.start({
      instances: [{ name: 'cp', role: 'control-plane', ip: '127.0.0.1' }],
      endpoint: { host: '127.0.0.1', apiServerPort: 1, joinServicePort: 1, initPort: 0 },
      initSecretHash: await hashInitSecret(Buffer.from('secret'), { log2N: 10, r: 8, p: 1 }),
    });
    const image = join(dir, 'state.img');
    await writeFile(image, '');
    await truncate(image, 32 * 1024 * 1024);
    const node = spawn(
      process.execPath,
      [
        bundle,
        `--root=${dir}`,
        `--tpm=swtpm:${swtpm.host}:${swtpm.port}`,
        `--ek-roots=${ekCa().rootCertPath}`,
        `--state-disk=${image}`,
        '--disk-kdf=fast',
        `--metadata-url=${metadata.url}`,
        '--node-name=cp',
        '--init-host=127.0.0.1',
        '--init-port=0',
        '--recovery-port=0',
        '--on-fatal=exit',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let log = '';
    node.stdout.on('data', (c: Buffer) => (log += c.toString()));
    try {
      const listening = await waitFor(() => /"message":"init server listening","port":(\d+)/.exec(log)?.[1], {
        timeoutMs: 30_000,
        description: 'the node to listen',
      });
      const workspace = join(dir, 'workspace');
      const wrong = expectedMeasurements([{ ...BOOT[0]!, digest: componentDigest('bundle v2') }], [9, 15]);
      await writeWorkspaceFile(
        workspaceFiles(workspace).config,
        configYaml({
          name: 'c',
          kubernetesVersion: 'v1.37.2',
          initEndpoint: `127.0.0.1:${listening}`,
          apiServerCertSans: [],
          serviceCidr: '10.96.0.0/12',
          attestation: {
            variant: 'tpm2-ek',
            measurements: wrong,
            ekRoots: await readFile(ekCa().rootCertPath, 'utf8'),
            ekIntermediates: await readFile(ekCa().intermediateCertPath, 'utf8'),
          },
        }),
        false,
      );
      await writeWorkspaceFile(workspaceFiles(workspace).initSecret, 'secret', true);
      const lines: string[] = [];
      const err = await runInit({ workspace, print: (l) => lines.push(l), retryDelayMs: 10 }).catch((e: unknown) => e);
      expect(errorMessage(err)).toMatch(
        /^the node at 127\.0\.0\.1:\d+ failed attestation, nothing was sent to it: measurements do not match: PCR 9: expected [0-9a-f]{64}, actual [0-9a-f]{64}/,
      );
      // The node never saw a request: no init started, nothing refused, still unlocked and listening.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(log).not.toContain('init started');
      expect(log).not.toContain('wrong init secret');
      expect(node.exitCode).toBeNull();
      expect(lines.some((l) => l.includes('node attested'))).toBe(false);
    } finally {
      node.kill('SIGKILL');
      await withTimeout(new Promise((resolve) => node.once('exit', resolve)), 5_000, 'node exit').catch(
        () => undefined,
      );
      await metadata.close();
      await swtpm.stop();
    }
  });

  it('names the field for a broken config and refuses to run without an init secret', async () => {
    const workspace = await tempDirForTest();
    const files = workspaceFiles(workspace);
    await writeFile(
      files.config,
      'name: c\nkubernetesVersion: latest\ninitEndpoint: a:1\nattestation: {variant: qemu-vtpm, measurements: {}}\n',
    );
    await expect(runInit({ workspace, print: () => undefined })).rejects.toThrow(
      /constellation-conf\.yaml: kubernetesVersion: must be a release like v1\.37\.2, got "latest"; supported are v1\.35, v1\.36, v1\.37/,
    );
    await writeFile(
      files.config,
      'name: c\nkubernetesVersion: v1.37.2\ninitEndpoint: a:1\nattestation: {variant: qemu-vtpm, measurements: {"9": {expected: "zz"}}}\n',
    );
    await expect(runInit({ workspace, print: () => undefined })).rejects.toThrow(
      /attestation: measurements\.9\.expected: expected 64 hex characters/,
    );
    await writeFile(
      files.config,
      'name: c\nkubernetesVersion: v1.37.2\ninitEndpoint: a:1\nextra: 1\nattestation: {variant: qemu-vtpm, measurements: {}}\n',
    );
    await expect(runInit({ workspace, print: () => undefined })).rejects.toThrow(/unknown field "extra"/);
    await writeFile(
      files.config,
      'name: c\nkubernetesVersion: v1.37.2\ninitEndpoint: a:1\nattestation: {variant: qemu-vtpm, measurements: {}}\n',
    );
    await expect(runInit({ workspace, print: () => undefined })).rejects.toThrow(
      /attestation: the measurements must not be empty: an empty set would accept any machine/,
    );
    await writeFile(
      files.config,
      `name: c\nkubernetesVersion: v1.37.2\ninitEndpoint: a:1\nattestation: {variant: qemu-vtpm, measurements: {"15": {expected: "${'0'.repeat(64)}"}}}\n`,
    );
    await expect(runInit({ workspace, print: () => undefined })).rejects.toThrow(
      /attestation: the measurements enforce no boot measurement \(only PCR 15\): any software on a genuine TPM would pass/,
    );
    await writeFile(
      files.config,
      `name: c\nkubernetesVersion: v1.37.2\ninitEndpoint: a:1\nattestation: {variant: qemu-vtpm, measurements: {"9": {expected: "${'1'.repeat(64)}"}, "15": {expected: "${'0'.repeat(64)}"}}}\n`,
    );
    await expect(runInit({ workspace, print: () => undefined })).rejects.toThrow(/no init secret at/);
  });
});
