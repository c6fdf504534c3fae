import { X509Certificate, createPrivateKey, randomBytes } from 'node:crypto';
import { readFile, readlink, stat } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as k8s from '@kubernetes/client-node';
import type { Issuer } from '@constellation/attestation';
import { deriveClusterId, deriveMeasurementSecret, deriveStateDiskKey, markedPcr15 } from '@constellation/keys';
import type { RecoverResponse } from '@constellation/proto';
import { waitFor, withTimeout } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  TestNode,
  callInit,
  initRequest,
  instanceIp,
  kubernetesRelease,
  startCluster,
  startJoinServiceProcess,
} from './node.fixture.js';
import { JOIN_STEP_ORDER } from './join-steps.js';
import { JoinClient } from './join-client.js';
import { MetadataClient } from './metadata-client.js';
import { writeFileAtomic } from './secure-files.js';
import type { RunningJoinService } from './node.fixture.js';
import type { Cluster } from './node.fixture.js';

let cluster: Cluster;
let controlPlane: TestNode;
let worker: TestNode;
/** What beforeAll started, stopped last started first even when it failed half-way. */
const started: (() => Promise<void>)[] = [];
let joinService: RunningJoinService | undefined;
const request = initRequest();
const clusterId = deriveClusterId(
  deriveMeasurementSecret(request.masterSecret, request.masterSalt),
  request.measurementSalt,
);

async function startTestJoinService(): Promise<void> {
  joinService = await startJoinServiceProcess(cluster, controlPlane, request);
}

async function stopJoinService(): Promise<void> {
  await joinService?.stop();
  joinService = undefined;
}

beforeAll(async () => {
  cluster = await startCluster([
    { name: 'control-plane-0', role: 'control-plane' },
    { name: 'worker-1', role: 'worker' },
    { name: 'worker-2', role: 'worker' },
    { name: 'worker-3', role: 'worker' },
  ]);
  started.push(() => cluster.close());
  // Real machines: the control plane runs kubeadm init, the worker kubeadm join.
  controlPlane = await TestNode.create(cluster, 'control-plane-0', { machine: true });
  started.push(() => controlPlane.stop());
  worker = await TestNode.create(cluster, 'worker-1', { machine: true });
  started.push(() => worker.stop());
}, 120_000);

afterAll(async () => {
  await stopJoinService();
  for (const stop of started.splice(0).reverse()) await stop();
}, 120_000);

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
    // Its first attempt waits for the first-boot format (the disk's UUID goes in the request).
    await waitFor(() => worker.logger.entries.some((e) => e.message === 'no join ticket yet'), {
      timeoutMs: 20_000,
      description: "the worker's first attempt, refused: no JoinService yet",
    });

    await startTestJoinService();
    expect(await withTimeout(workerOutcome, 60_000, 'worker outcome')).toBe('joined');
    // The worker used its ticket only after the JoinService proved it runs on the control plane.
    expect(worker.logger.entries.find((e) => e.message === 'JoinService host proven')?.fields['host']).toBe(
      'control-plane-0',
    );
    expect((await worker.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(markedPcr15(clusterId));
    const uuid = await worker.context.disk.uuid();
    expect(
      await worker.context.disk.testPassphrase(
        deriveStateDiskKey(
          request.masterSecret,
          request.masterSalt,
          uuid,
          worker.context.issuer.rooted?.ekPublicKeyHash,
        ),
      ),
    ).toBe(true);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(controlPlane.context.paths.adminConf);
    // kubeadm join ends once the kubelet has its kubeconfig; the kubelet registers its Node after.
    await waitFor(
      async () => (await kc.makeApiClient(k8s.CoreV1Api).listNode()).items.some((n) => n.metadata?.name === 'worker-1'),
      { timeoutMs: 30_000, intervalMs: 250, description: "worker-1's kubelet to register its Node" },
    );
    const nodes = await kc.makeApiClient(k8s.CoreV1Api).listNode();
    expect(nodes.items.map((n) => n.metadata?.name).sort()).toEqual(['control-plane-0', 'worker-1']);
    expect(worker.fatalErrors).toEqual([]);
    // Each step past the ticket is named in the node's log, in order, and its join status says joined.
    const started = (message: string): unknown[] =>
      worker.logger.entries.filter((e) => e.message === message).map((e) => e.fields['step']);
    expect(started('join step started')).toEqual(JOIN_STEP_ORDER.slice(2));
    expect(started('join step done')).toEqual(JOIN_STEP_ORDER.slice(2));
    expect(started('no join ticket yet')).toContain('request-ticket');
    expect(JSON.parse(await readFile(worker.context.paths.joinStatus, 'utf8'))).toMatchObject({
      state: 'joined',
      step: 'start-kubelet',
    });
  }, 150_000);

  // The two profiles of pkg/apis/certificates/helpers.go (ValidateKubeletClientCSR,
  // ValidateKubeletServingCSR), written where the kubelet looks: its certificate store
  // (k8s.io/client-go/util/certificate fileStore) and the KubeletConfiguration's tlsCertFile.
  it("the joined worker's kubelet has its client credential in its certificate store and its serving certificate at tlsCertFile", async () => {
    const { paths } = worker.context;
    const current = join(paths.kubeletCertDir, 'kubelet-client-current.pem');
    const target = await readlink(current);
    expect(target).toMatch(/^kubelet-client-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}\.pem$/);
    expect((await stat(join(paths.kubeletCertDir, target))).mode & 0o777).toBe(0o600);
    const pair = await readFile(current, 'utf8');
    const client = new X509Certificate(pair);
    expect(client.checkPrivateKey(createPrivateKey(pair))).toBe(true);
    expect(client.subject).toBe('O=system:nodes\nCN=system:node:worker-1');
    expect(client.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(client.subjectAltName).toBeUndefined();

    const serving = new X509Certificate(await readFile(paths.kubeletServingCert));
    expect(serving.checkPrivateKey(createPrivateKey(await readFile(paths.kubeletServingKey)))).toBe(true);
    expect(serving.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(serving.subjectAltName).toBe(`DNS:worker-1, IP Address:${instanceIp(cluster, 'worker-1')}`);
    expect((await stat(paths.kubeletServingKey)).mode & 0o777).toBe(0o600);

    // The client credential is a node credential the API server accepts: system:node:worker-1
    // may read its own Node (Node authorizer), and nothing of the control plane's PKI.
    const admin = new k8s.KubeConfig();
    admin.loadFromFile(controlPlane.context.paths.adminConf);
    const apiCluster = admin.getCurrentCluster();
    if (apiCluster === null) throw new Error('admin.conf has no cluster');
    const kubelet = new k8s.KubeConfig();
    kubelet.loadFromOptions({
      clusters: [apiCluster],
      users: [
        {
          name: 'kubelet',
          certData: Buffer.from(pair).toString('base64'),
          keyData: Buffer.from(pair).toString('base64'),
        },
      ],
      contexts: [{ name: 'kubelet', cluster: apiCluster.name, user: 'kubelet' }],
      currentContext: 'kubelet',
    });
    const api = kubelet.makeApiClient(k8s.CoreV1Api);
    expect((await api.readNode({ name: 'worker-1' })).metadata?.name).toBe('worker-1');
    await expect(api.listNamespacedSecret({ namespace: 'kube-system' })).rejects.toMatchObject({ code: 403 });
  });

  it('an Init sent to a node that already joined gets nowhere', async () => {
    const late = await callInit(worker, initRequest());
    expect(late.messages).toEqual([]);
    expect(late.identityError).toMatchObject({ code: grpc.status.UNAVAILABLE });
    expect(worker.context.lock.heldBy).toBe('join');
  });

  it('a ticket that arrives after the join client stopped is not used: the node stays unlocked and unjoined', async () => {
    const issuedFor = (name: string): number =>
      (joinService?.output() ?? '')
        .split('\n')
        .filter((line) => line.includes('"join ticket issued"') && line.includes(`"node":"${name}"`)).length;
    const late = await TestNode.create(cluster, 'worker-2');
    try {
      // A first boot's disk, as the node's assessment leaves it.
      const passphrase = randomBytes(32);
      await late.context.disk.format(passphrase);
      await writeFileAtomic(late.context.paths.initialDiskKey, passphrase, true);
      const { issuer } = late.context;
      // Stops the client while its request is in flight: the service's challenge is being answered.
      const stoppingIssuer: Issuer = {
        variant: issuer.variant,
        ...(issuer.rooted === undefined ? {} : { rooted: issuer.rooted }),
        issue: (userData, nonce) => {
          void client.stop();
          return issuer.issue(userData, nonce);
        },
      };
      let committed = 0;
      const client: JoinClient = new JoinClient(
        { ...late.context, issuer: stoppingIssuer },
        { initialBackoffMs: 50, maxBackoffMs: 300, requestTimeoutMs: 15_000, committed: () => committed++ },
      );
      expect(await withTimeout(client.run(), 30_000, 'join client')).toBe('stopped');
      // The service did hand it a ticket; the node used none of it.
      await waitFor(() => issuedFor('worker-2') === 1, {
        timeoutMs: 10_000,
        description: "the JoinService's log of worker-2's ticket",
      });
      expect(committed).toBe(0);
      expect(late.context.lock.heldBy).toBeUndefined();
      expect((await late.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(Buffer.alloc(32));
      expect(late.logger.entries.some((e) => e.message === 'joining the cluster')).toBe(false);
    } finally {
      await late.stop();
    }
  });

  it("a worker refuses a ticket for a Kubernetes older than its image's minimum before the point of no return, saying so in its join status", async () => {
    // Above the cluster's release (the built programs').
    const picky = await TestNode.create(cluster, 'worker-3', { minimumKubernetesVersion: 'v1.99.0' });
    try {
      const passphrase = randomBytes(32);
      await picky.context.disk.format(passphrase);
      await writeFileAtomic(picky.context.paths.initialDiskKey, passphrase, true);
      let committed = 0;
      const client = new JoinClient(picky.context, {
        initialBackoffMs: 50,
        maxBackoffMs: 300,
        requestTimeoutMs: 15_000,
        committed: () => committed++,
      });
      const outcome = client.run();
      const status = await waitFor(
        async () => {
          const text = await readFile(picky.context.paths.joinStatus, 'utf8').catch(() => '');
          if (text === '') return undefined;
          const recorded = JSON.parse(text) as { state: string; code?: string; message?: string };
          return recorded.code === 'FAILED_PRECONDITION' ? recorded : undefined;
        },
        { timeoutMs: 30_000, description: "worker-3's join status: the ticket refused" },
      );
      await client.stop();
      expect(await withTimeout(outcome, 30_000, 'join client')).toBe('stopped');
      expect(status).toMatchObject({
        state: 'refused',
        code: 'FAILED_PRECONDITION',
        message: `this node refuses the join ticket: Kubernetes ${kubernetesRelease()} is older than this node image's minimum v1.99.0 (downgrade refused)`,
      });
      expect(committed).toBe(0);
      expect(picky.context.lock.heldBy).toBeUndefined();
      expect((await picky.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(Buffer.alloc(32));
    } finally {
      await picky.stop();
    }
  });

  it('a worker whose metadata service stops answering once it passed the point of no return still joins', async () => {
    // A real HTTP hop in front of the metadata service that answers /self with 503 from the
    // moment the node commits: found on main, the join read the node's name and address again
    // there, and failed past the point of no return (disk reset, reboot).
    let committed = false;
    const hop = createServer((req, res) => {
      if (committed && req.url === '/self') {
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"restarting"}');
        return;
      }
      const upstream = httpRequest(`${cluster.metadata.url}${req.url ?? '/'}`, { headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.writeHead(502).end());
      upstream.end();
    });
    await new Promise<void>((resolve) => hop.listen(0, '127.0.0.1', resolve));
    const { port } = hop.address() as AddressInfo;
    const node = await TestNode.create(cluster, 'worker-2', { machine: true });
    try {
      // A first boot's disk, as the node's assessment leaves it.
      const passphrase = randomBytes(32);
      await node.context.disk.format(passphrase);
      await writeFileAtomic(node.context.paths.initialDiskKey, passphrase, true);
      const client = new JoinClient(
        { ...node.context, metadata: new MetadataClient(`http://127.0.0.1:${String(port)}`, 'worker-2') },
        {
          initialBackoffMs: 50,
          maxBackoffMs: 300,
          requestTimeoutMs: 15_000,
          committed: () => {
            committed = true;
          },
        },
      );
      expect(await withTimeout(client.run(), 60_000, 'join client')).toBe('joined');
      expect(committed).toBe(true);
      expect(node.kubeletStarts).toBe(1);
    } finally {
      await node.stop();
      await new Promise<void>((resolve) => {
        hop.close(() => {
          resolve();
        });
      });
    }
  }, 90_000);

  it('a rebooted worker with an initialised disk takes the rejoin path and re-marks its TPM', async () => {
    await worker.reboot();
    expect((await worker.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(Buffer.alloc(32));
    expect(await withTimeout(worker.bootstrapper().run(), 60_000, 'rejoin')).toBe('rejoined');
    expect((await worker.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(markedPcr15(clusterId));
    expect(worker.kubeletStarts).toBe(1);
    expect(worker.logger.entries.find((e) => e.message === 'rejoined the cluster')?.fields['source']).toBe(
      'rejoin-ticket',
    );
    // A bootstrapper restarted in the same boot (systemd, after a crash) finds the rejoin's record.
    expect(await withTimeout(worker.bootstrapper().run(), 30_000, 'restart')).toBe('already-bootstrapped');
    expect(worker.kubeletStarts).toBe(2);
    expect(worker.fatalErrors).toEqual([]);
  });

  it('after a full control-plane shutdown, a control plane is recovered over attested TLS with keys derived from the master secret', async () => {
    await stopJoinService();
    await controlPlane.reboot();
    const outcome = controlPlane.bootstrapper().run();
    await waitFor(() => controlPlane.recoveryPort > 0, { timeoutMs: 20_000, description: 'the recovery server' });
    const recover = async (masterSecret: Buffer): Promise<RecoverResponse> => {
      // Keys go only to a node whose TPM proved its EK identity, derived for that TPM and its disk.
      const { client, identity } = await controlPlane.recoveryClient();
      try {
        const diskUuid = await controlPlane.context.disk.uuid();
        return await new Promise((resolve, reject) => {
          client.recover(
            {
              stateDiskKey: deriveStateDiskKey(masterSecret, request.masterSalt, diskUuid, identity.ekPublicKeyHash),
              measurementSecret: deriveMeasurementSecret(masterSecret, request.masterSalt),
            },
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
      details: "this measurement secret does not belong to this node's cluster",
    });
    const answer = await recover(request.masterSecret);
    expect(answer.clusterIdHex).toBe(clusterId.toString('hex'));
    expect(await withTimeout(outcome, 20_000, 'recovery outcome')).toBe('rejoined');
    expect((await controlPlane.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(markedPcr15(clusterId));
  });
});
