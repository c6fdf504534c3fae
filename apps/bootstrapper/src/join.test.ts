import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as k8s from '@kubernetes/client-node';
import { AttestedChannelCredentials, proveServerIdentity } from '@constellation/atls';
import { TpmValidator, measurementsToFile } from '@constellation/attestation';
import {
  deriveClusterId,
  deriveMeasurementSecret,
  deriveStateDiskKey,
  markedPcr15,
  masterSecretToJson,
} from '@constellation/keys';
import { RecoveryServiceClient } from '@constellation/proto';
import type { RecoverResponse } from '@constellation/proto';
import { repoRoot, waitFor, withTimeout } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveAgentOnControlPlane } from './attestation-agent.js';
import { MEASUREMENTS, TestNode, callInit, initRequest, startCluster } from './node.fixture.js';
import type { Cluster } from './node.fixture.js';

let cluster: Cluster;
let controlPlane: TestNode;
let worker: TestNode;
let joinService: ChildProcess | undefined;
let agent: { close(): Promise<void> } | undefined;
const request = initRequest();
const clusterId = deriveClusterId(
  deriveMeasurementSecret(request.masterSecret, request.masterSalt),
  request.measurementSalt,
);

/** Starts the real JoinService as a process with the DaemonSet's arguments and the mounted files. */
async function startJoinService(): Promise<void> {
  // As program.ts does once a control plane is bootstrapped: the agent the JoinService attests through.
  agent ??= await serveAgentOnControlPlane(controlPlane.context);
  const dir = join(cluster.dir.path, 'joinservice');
  await mkdir(join(dir, 'config'), { recursive: true });
  await writeFile(join(dir, 'config', 'attestationConfig'), JSON.stringify(measurementsToFile(MEASUREMENTS)));
  await writeFile(join(dir, 'config', 'measurementSalt'), request.measurementSalt);
  await copyFile(cluster.ekCa.rootCertPath, join(dir, 'config', 'ekRoots'));
  await writeFile(
    join(dir, 'mastersecret.json'),
    masterSecretToJson({ key: request.masterSecret, salt: request.masterSalt }),
    { mode: 0o600 },
  );
  const child = spawn(
    process.execPath,
    [
      '--conditions=@constellation/source',
      '--import',
      'tsx',
      join(repoRoot(), 'apps/joinservice/src/main.ts'),
      '--host=127.0.0.1',
      `--port=${cluster.joinServicePort}`,
      '--metrics-host=127.0.0.1',
      '--metrics-port=0',
      '--health-port=0',
      `--config-dir=${join(dir, 'config')}`,
      `--master-secret-file=${join(dir, 'mastersecret.json')}`,
      `--pki-dir=${controlPlane.context.paths.kubernetesPki}`,
      `--kubeconfig=${controlPlane.context.paths.adminConf}`,
      `--api-server-endpoint=127.0.0.1:${cluster.apiServerPort}`,
      `--instance-registry-url=${cluster.metadata.url}`,
      `--attestation-agent=${controlPlane.context.paths.attestationAgentSocket}`,
    ],
    { cwd: repoRoot(), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  joinService = child;
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  await waitFor(() => out.includes('"joinservice serving"'), {
    timeoutMs: 30_000,
    description: `the JoinService to serve (output: ${out.slice(-500)})`,
  });
}

async function stopJoinService(): Promise<void> {
  const child = joinService;
  if (child === undefined) return;
  joinService = undefined;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await withTimeout(exited, 10_000, 'JoinService exit');
}

beforeAll(async () => {
  cluster = await startCluster([
    { name: 'control-plane-0', role: 'control-plane', ip: '127.0.0.1' },
    { name: 'worker-1', role: 'worker', ip: '127.0.0.2' },
  ]);
  controlPlane = await TestNode.create(cluster, 'control-plane-0');
  worker = await TestNode.create(cluster, 'worker-1');
});

afterAll(async () => {
  await stopJoinService();
  await agent?.close();
  await worker.stop();
  await controlPlane.stop();
  await cluster.close();
});

describe('join, rejoin and recovery with the real JoinService', () => {
  it('a worker started before the cluster exists keeps retrying, then joins once the JoinService serves', async () => {
    const workerOutcome = worker.bootstrapper().run();
    const cpOutcome = controlPlane.bootstrapper().run();
    await waitFor(() => controlPlane.initPort > 0 && worker.initPort > 0, {
      timeoutMs: 20_000,
      description: 'both InitServers',
    });
    const init = await callInit(controlPlane, request);
    expect(init.error).toBeUndefined();
    expect(await withTimeout(cpOutcome, 10_000, 'control-plane outcome')).toBe('initialized');
    // The control plane's own JoinClient stopped at the lock: it never joined anything.
    expect(controlPlane.logger.entries.some((e) => e.message === 'joined the cluster')).toBe(false);
    expect(worker.logger.entries.some((e) => e.message === 'no join ticket yet')).toBe(true);

    await startJoinService();
    expect(await withTimeout(workerOutcome, 60_000, 'worker outcome')).toBe('joined');
    // The worker used its ticket only after the JoinService proved it runs on the control plane.
    expect(worker.logger.entries.find((e) => e.message === 'JoinService host proven')?.fields['host']).toBe(
      'control-plane-0',
    );
    expect((await worker.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(markedPcr15(clusterId));
    const uuid = await worker.context.disk.uuid();
    expect(
      await worker.context.disk.testPassphrase(deriveStateDiskKey(request.masterSecret, request.masterSalt, uuid)),
    ).toBe(true);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(controlPlane.context.paths.adminConf);
    const nodes = await kc.makeApiClient(k8s.CoreV1Api).listNode();
    expect(nodes.items.map((n) => n.metadata?.name).sort()).toEqual(['control-plane-0', 'worker-1']);
    expect(worker.fatalErrors).toEqual([]);
  });

  it('an Init sent to a node that already joined gets nowhere', async () => {
    const late = await callInit(worker, initRequest());
    expect(late.messages).toEqual([]);
    expect(late.identityError).toMatchObject({ code: grpc.status.UNAVAILABLE });
    expect(worker.context.lock.heldBy).toBe('join');
  });

  it('a rebooted worker with an initialised disk takes the rejoin path and re-marks its TPM', async () => {
    await worker.reboot();
    expect((await worker.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(Buffer.alloc(32));
    expect(await withTimeout(worker.bootstrapper().run(), 60_000, 'rejoin')).toBe('rejoined');
    expect((await worker.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(markedPcr15(clusterId));
    expect(worker.kubeletStarts).toBe(1);
    expect(worker.logger.entries.find((e) => e.message === 'rejoined the cluster')?.fields['source']).toBe(
      'rejoin-ticket',
    );
  });

  it('after a full control-plane shutdown, a control plane is recovered with the master secret over attested TLS', async () => {
    await stopJoinService();
    await controlPlane.reboot();
    const outcome = controlPlane.bootstrapper().run();
    await waitFor(() => controlPlane.recoveryPort > 0, { timeoutMs: 20_000, description: 'the recovery server' });
    const recover = async (masterSecret: Buffer): Promise<RecoverResponse> => {
      const credentials = new AttestedChannelCredentials([new TpmValidator({ measurements: MEASUREMENTS })]);
      const client = new RecoveryServiceClient(
        `127.0.0.1:${controlPlane.recoveryPort}`,
        credentials.credentials,
        credentials.channelOptions,
      );
      try {
        // The master secret goes only to a node whose TPM proved its EK identity.
        await proveServerIdentity(client.getChannel(), credentials, cluster.ekVerifier);
        return await new Promise((resolve, reject) => {
          client.recover(
            { masterSecret, masterSalt: request.masterSalt },
            new grpc.Metadata(),
            { deadline: Date.now() + 20_000 },
            (err, res) => {
              if (err) reject(err);
              else resolve(res);
            },
          );
        });
      } finally {
        client.close();
      }
    };
    await expect(recover(Buffer.alloc(32, 7))).rejects.toMatchObject({
      code: grpc.status.PERMISSION_DENIED,
      details: 'this master secret does not open the state disk of this node',
    });
    const answer = await recover(request.masterSecret);
    expect(answer.clusterIdHex).toBe(clusterId.toString('hex'));
    expect(await withTimeout(outcome, 20_000, 'recovery outcome')).toBe('rejoined');
    expect((await controlPlane.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(markedPcr15(clusterId));
  });
});
