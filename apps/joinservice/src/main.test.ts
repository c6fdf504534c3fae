import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { Channel } from '@grpc/grpc-js';
import { SERVICE_CHANNEL_OPTIONS, serviceChannelCredentials } from '@constellation/atls';
import { HealthCheckResponse_ServingStatus, HealthClient, JoinServiceClient, createClient } from '@constellation/proto';
import { createTempDir, repoRoot, runTypeScript, tempDirForTest, waitFor, withTimeout } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinServiceCluster } from './join-service-cluster.fixture.js';
import type { JoinServiceCluster } from './join-service-cluster.fixture.js';
import { CLUSTER, writeMountedFiles } from './join-service.fixture.js';

const entry = new URL('./main.ts', import.meta.url).pathname;
const run = (...args: string[]) => runTypeScript(entry, args, { timeoutMs: 30_000 });

// The real control plane the service is started against: its pki, its address, and the
// join-service ServiceAccount's token in the kubeconfig.
let clusterDir: TempDir;
let cluster: JoinServiceCluster;

beforeAll(async () => {
  clusterDir = await createTempDir('constellation-joinservice-main-');
  cluster = await startJoinServiceCluster(clusterDir.path, { cluster: CLUSTER });
});

afterAll(async () => {
  await cluster.stop();
  await clusterDir.remove();
});

describe('constellation-joinservice entry point', () => {
  it('prints help with the defaults the DaemonSet relies on', async () => {
    const result = await run('--help');
    expect(result.code).toBe(0);
    const help = result.stdout.toString();
    expect(help).toContain('(default: 9090)');
    expect(help).toContain('(default: "/var/config")');
  });

  it('rejects unknown flags, bad values and a missing endpoint with exit code 2', async () => {
    const unknown = await run('--bogus', '--api-server-endpoint', 'a:1');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--bogus'");
    const missing = await run();
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("required option '--api-server-endpoint <host:port>' not specified");
    const badEndpoint = await run('--api-server-endpoint', 'no-port');
    expect(badEndpoint.stderr).toContain('expected host:port, got "no-port"');
    const variant = await run('--api-server-endpoint', 'a:1', '--attestation-variant', 'dummy');
    expect(variant.code).toBe(2);
    expect(variant.stderr).toContain('is for tests only');
  }, 90_000);

  it('starts from mounted files, answers health probes, logs JSON and stops cleanly on SIGTERM', async () => {
    const dir = await tempDirForTest();
    const { settings } = await writeMountedFiles(dir, cluster);
    const common = [
      `--config-dir=${dir}/config`,
      `--master-secret-file=${settings.masterSecretPath}`,
      `--pki-dir=${settings.pkiDir}`,
      `--kubeconfig=${settings.kubeconfigPath ?? ''}`,
      `--api-server-endpoint=${cluster.apiServerEndpoint}`,
    ];
    // tpm2-ek binds tickets to registered machines: without a registry (or the explicit bare-metal
    // switch) the service refuses to start rather than trust what nodes ask for.
    const unbound = await run('--port=0', '--metrics-port=0', '--health-port=0', ...common);
    expect(unbound.code).toBe(1);
    expect(unbound.stderr + unbound.stdout.toString()).toContain(
      'attestation variant "tpm2-ek" needs an instance registry (--instance-registry-url)',
    );
    // The bare-metal control-plane list means nothing next to a registry, which names roles itself.
    const cpList = `${dir}/control-plane-eks`;
    await writeFile(cpList, 'sha256:not-a-hash\n');
    const misplaced = await run(
      ...common,
      '--instance-registry-url=http://127.0.0.1:9/',
      `--control-plane-eks=${cpList}`,
    );
    expect(misplaced.code).toBe(1);
    expect(misplaced.stderr + misplaced.stdout.toString()).toContain(
      '--control-plane-eks applies only with --accept-unregistered-eks',
    );
    const badList = await run(...common, '--accept-unregistered-eks', `--control-plane-eks=${cpList}`);
    expect(badList.code).toBe(1);
    expect(badList.stderr + badList.stdout.toString()).toContain(
      `${cpList} line 1: expected an EK hash "sha256:" followed by 64 hex digits, got "sha256:not-a-hash"`,
    );
    const child = spawn(
      process.execPath,
      [
        '--conditions=@constellation/source',
        '--import',
        'tsx',
        entry,
        '--host=127.0.0.1',
        '--port=0',
        '--metrics-port=0',
        '--health-port=0',
        `--config-dir=${dir}/config`,
        `--master-secret-file=${settings.masterSecretPath}`,
        `--pki-dir=${settings.pkiDir}`,
        `--kubeconfig=${settings.kubeconfigPath ?? ''}`,
        `--api-server-endpoint=${cluster.apiServerEndpoint}`,
        '--instance-registry-url=http://127.0.0.1:9/',
      ],
      { cwd: repoRoot(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const serving = await waitFor(
      () =>
        stdout
          .split('\n')
          .map((l) => (l.startsWith('{') ? (JSON.parse(l) as Record<string, unknown>) : {}))
          .find((e) => e['message'] === 'joinservice serving'),
      { timeoutMs: 20_000, description: 'the joinservice to log that it serves' },
    );
    // Issue 50, item 7: the metrics (every node's join outcome and refusal reason) listen on
    // loopback unless told otherwise: on a control plane's host network, 0.0.0.0 let any pod read them.
    expect(serving['metricsHost']).toBe('127.0.0.1');
    // The kubelet probes the plaintext health port; nodes reach the same health service over TLS.
    const { credentials } = await import('@grpc/grpc-js');
    const probe = new HealthClient(`127.0.0.1:${String(serving['healthPort'])}`, credentials.createInsecure());
    const probed = await new Promise((resolve, reject) => {
      probe.check({ service: 'constellation.join.v1.JoinService' }, (err, res) => {
        if (err) reject(err);
        else resolve(res);
      });
    });
    probe.close();
    expect(probed).toEqual({ status: HealthCheckResponse_ServingStatus.SERVING });
    const client = new HealthClient(`127.0.0.1:${String(serving['port'])}`, serviceChannelCredentials());
    const status = await new Promise((resolve, reject) => {
      client.check({ service: '' }, (err, res) => {
        if (err) reject(err);
        else resolve(res);
      });
    });
    client.close();
    expect(status).toEqual({ status: HealthCheckResponse_ServingStatus.SERVING });
    // A node's join call that has sent nothing yet: the service holds its hello's time bound.
    // The health answer on the same connection comes after the service has taken the call.
    const channel = new Channel(`127.0.0.1:${String(serving['port'])}`, serviceChannelCredentials(), {
      ...SERVICE_CHANNEL_OPTIONS,
    });
    const joiner = createClient(JoinServiceClient, '', serviceChannelCredentials(), { channelOverride: channel });
    const sameConnection = createClient(HealthClient, '', serviceChannelCredentials(), { channelOverride: channel });
    const silentCall = joiner.issueJoinTicket();
    silentCall.on('error', () => undefined);
    await new Promise((resolve, reject) => {
      sameConnection.check({ service: '' }, (err, res) => {
        if (err) reject(err);
        else resolve(res);
      });
    });
    child.kill('SIGTERM');
    expect(await withTimeout(exited, 10_000, 'joinservice exit')).toBe(0);
    channel.close();
    expect(stdout).toContain('"message":"joinservice stopping"');
    expect(stdout).toContain('"message":"joinservice stopped"');
    // Nothing held it open once closed: not the cut call's time bound, nor anything else.
    expect(stdout).not.toContain('still held open after closing');
    expect(stdout).not.toMatch(/"key"|mastersecret"\s*:/i);
  }, 90_000);
});
