// The RecoveryService of a control plane waiting after a full control-plane shutdown answers
// anyone who reaches its port. It is given its disk's key and the measurement secret, never the
// master secret. A wrong measurement secret must cost a hash, not a cryptsetup run with the
// disk's memory-hard KDF, and only one disk check may run at a time.
import { connect } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { deriveClusterId, deriveMeasurementSecret, deriveStateDiskKey, markedPcr15 } from '@constellation/keys';
import type { DescribeResponse, RecoverRequest, RecoverResponse } from '@constellation/proto';
import { waitFor, withTimeout } from '@constellation/testing';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestNode, initRequest, startCluster } from './node.fixture.js';
import type { BootstrapOutcome, Cluster } from './node.fixture.js';
import { RECOVERY_RETRY_AFTER_MS } from './recovery-service.js';

let cluster: Cluster;
let node: TestNode;
/** What beforeAll started, stopped last started first even when it failed half-way. */
const started: (() => Promise<void>)[] = [];
let outcome: Promise<BootstrapOutcome>;
const request = initRequest();
const measurementSecret = deriveMeasurementSecret(request.masterSecret, request.masterSalt);
const clusterId = deriveClusterId(measurementSecret, request.measurementSalt);
/** What `constellation recover` sends this node: its disk's key (for its disk and EK) and the measurement secret. */
let body: RecoverRequest;

/** Counts the node's cryptsetup checks, how many ran at once, and can hold them. */
const disk = { calls: 0, running: 0, maxRunning: 0, hold: Promise.resolve(), opens: true };
/** Holds the node between "keys accepted" and closing the recovery server. */
let kubeletGate = Promise.resolve();

interface Caller {
  describe(): Promise<DescribeResponse>;
  recover(body: RecoverRequest): Promise<RecoverResponse>;
  close(): void;
}

/** A CLI-like caller: attested TLS, the node's EK identity proven, then Recover calls on that channel. */
async function caller(): Promise<Caller> {
  const { client } = await node.recoveryClient();
  return {
    describe: () =>
      new Promise((resolve, reject) => {
        client.describe({}, new grpc.Metadata(), { deadline: Date.now() + 20_000 }, (err, res) => {
          if (err) reject(err);
          else resolve(res);
        });
      }),
    recover: (recoverBody) =>
      new Promise((resolve, reject) => {
        client.recover(recoverBody, new grpc.Metadata(), { deadline: Date.now() + 20_000 }, (err, res) => {
          if (err) reject(err);
          else resolve(res);
        });
      }),
    close: () => {
      client.close();
    },
  };
}

/**
 * Callers connected one after the other: handshake attestations are bounded per peer address
 * (all of these are 127.0.0.1), and the Recover calls are what is measured here.
 */
async function callers(count: number): Promise<Caller[]> {
  const connected: Caller[] = [];
  for (let i = 0; i < count; i++) connected.push(await caller());
  return connected;
}

async function refusal(call: Promise<RecoverResponse>): Promise<grpc.ServiceError> {
  return call.then(
    () => {
      throw new Error('the call was expected to be refused');
    },
    (err: unknown) => err as grpc.ServiceError,
  );
}

beforeAll(async () => {
  cluster = await startCluster([{ name: 'control-plane-0', role: 'control-plane' }]);
  started.push(() => cluster.close());
  // A real machine: the node runs kubeadm init, and its kubelet again once it has its keys.
  node = await TestNode.create(cluster, 'control-plane-0', { machine: true });
  started.push(() => node.stop());
  await node.initialise(request);

  // Full control-plane shutdown: no JoinService, so only recovery can give this node its keys.
  await node.reboot();
  const testPassphrase = node.context.disk.testPassphrase.bind(node.context.disk);
  node.context.disk.testPassphrase = async (passphrase) => {
    disk.calls++;
    disk.running++;
    disk.maxRunning = Math.max(disk.maxRunning, disk.running);
    try {
      await disk.hold;
      return (await testPassphrase(passphrase)) && disk.opens;
    } finally {
      disk.running--;
    }
  };
  const startKubelet = node.context.startKubelet;
  node.context.startKubelet = async () => {
    await kubeletGate;
    await startKubelet();
  };
  body = {
    stateDiskKey: deriveStateDiskKey(
      request.masterSecret,
      request.masterSalt,
      await node.context.disk.uuid(),
      node.context.issuer.rooted?.ekPublicKeyHash,
    ),
    measurementSecret,
  };
  outcome = node.bootstrapper().run();
  await waitFor(() => node.recoveryPort > 0, { timeoutMs: 20_000, description: 'the recovery server' });
}, 170_000);

afterAll(async () => {
  for (const stop of started.splice(0).reverse()) await stop();
}, 120_000);

describe('Recover on a control plane waiting for recovery', () => {
  it('says which disk it would open and which cluster it recorded, both public', async () => {
    const cli = await caller();
    try {
      expect(await cli.describe()).toEqual({
        diskUuid: await node.context.disk.uuid(),
        clusterIdHex: clusterId.toString('hex'),
      });
    } finally {
      cli.close();
    }
    expect(disk.calls).toBe(0);
  });

  it('malformed requests get INVALID_ARGUMENT naming the field, without touching the disk', async () => {
    const cli = await caller();
    try {
      const cases: [RecoverRequest, string][] = [
        [
          { stateDiskKey: Buffer.alloc(8), measurementSecret },
          'recover request field state_disk_key: must be 32 bytes, got 8',
        ],
        [
          { stateDiskKey: body.stateDiskKey, measurementSecret: Buffer.alloc(31) },
          'recover request field measurement_secret: must be 32 bytes, got 31',
        ],
      ];
      for (const [malformed, details] of cases) {
        expect(await refusal(cli.recover(malformed))).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details });
      }
    } finally {
      cli.close();
    }
    expect(disk.calls).toBe(0);
  });

  it('six concurrent callers with measurement secrets of another cluster are all refused fast, and cryptsetup never runs', async () => {
    const six = await callers(6);
    try {
      const started = performance.now();
      const refusals = await Promise.all(
        six.map((cli, i) =>
          refusal(
            cli.recover(
              // One of them has the right disk key: without this cluster's measurement secret, still refused.
              i === 0
                ? { stateDiskKey: body.stateDiskKey, measurementSecret: randomBytes(32) }
                : { stateDiskKey: randomBytes(32), measurementSecret: randomBytes(32) },
            ),
          ),
        ),
      );
      const elapsedMs = performance.now() - started;
      process.stdout.write(`6 concurrent wrong-secret Recover calls refused in ${elapsedMs.toFixed(0)} ms\n`);
      for (const err of refusals) {
        expect(err).toMatchObject({
          code: grpc.status.PERMISSION_DENIED,
          details: "this measurement secret does not belong to this node's cluster",
        });
      }
      expect(disk.calls).toBe(0);
      // One HKDF each; before the cheap check this ran six cryptsetups at once.
      expect(elapsedMs).toBeLessThan(2_000);
    } finally {
      for (const cli of six) cli.close();
    }
  });

  it("a key derived for another machine's TPM (same disk, this cluster) fails the disk's key check and is refused without a disk check", async () => {
    const cli = await caller();
    const before = disk.calls;
    try {
      const uuid = await node.context.disk.uuid();
      expect(
        await refusal(
          cli.recover({
            stateDiskKey: deriveStateDiskKey(request.masterSecret, request.masterSalt, uuid, 'ab'.repeat(32)),
            measurementSecret,
          }),
        ),
      ).toMatchObject({
        code: grpc.status.PERMISSION_DENIED,
        details: `this key does not open state disk ${uuid} of this node (it fails the key check in the disk's header; the measurement secret is this cluster's: was the key derived for another disk or machine?)`,
      });
    } finally {
      cli.close();
    }
    expect(disk.calls).toBe(before);
  });

  it('two concurrent right keys: one opens the disk, the other is told to retry; then the node is already recovered', async () => {
    let releaseDisk = (): void => undefined;
    disk.hold = new Promise((resolve) => (releaseDisk = resolve));
    let releaseKubelet = (): void => undefined;
    kubeletGate = new Promise((resolve) => (releaseKubelet = resolve));
    const [first, second] = await callers(2);
    if (first === undefined || second === undefined) throw new Error('two callers expected');
    const before = disk.calls;
    try {
      const results: PromiseSettledResult<RecoverResponse>[] = [];
      // Each call settles into `results` in the order the answers arrive.
      const calls = [first, second].map((cli) =>
        cli.recover(body).then(
          (value) => {
            results.push({ status: 'fulfilled', value });
          },
          (reason: unknown) => {
            results.push({ status: 'rejected', reason });
          },
        ),
      );
      // The first check is held inside cryptsetup: the other call must come back without one.
      await waitFor(() => results.length === 1, { timeoutMs: 10_000, description: 'one call to be turned away' });
      const busy = results[0];
      expect(busy?.status).toBe('rejected');
      const err = (busy as PromiseRejectedResult).reason as grpc.ServiceError;
      expect(err).toMatchObject({
        code: grpc.status.UNAVAILABLE,
        details: 'another recovery attempt is being checked; retry',
      });
      expect(err.metadata.get('retry-after-ms')).toEqual([String(RECOVERY_RETRY_AFTER_MS)]);
      expect(disk.calls).toBe(before + 1);

      releaseDisk();
      await Promise.all(calls);
      const answers = results.filter((r) => r.status === 'fulfilled').map((r) => r.value);
      expect(answers).toEqual([{ diskUuid: await node.context.disk.uuid(), clusterIdHex: clusterId.toString('hex') }]);
      expect(disk.calls).toBe(before + 1);
      expect(disk.maxRunning).toBe(1);

      // Recovered, not yet closed (the kubelet start is held): a further call is refused, no disk check.
      for (const cli of [first, second]) {
        expect(await refusal(cli.recover(body))).toMatchObject({
          code: grpc.status.FAILED_PRECONDITION,
          details: 'this node is already recovered: its state disk is open and it rejoined its cluster',
        });
        expect(
          await refusal(cli.recover({ stateDiskKey: randomBytes(32), measurementSecret: randomBytes(32) })),
        ).toMatchObject({
          code: grpc.status.FAILED_PRECONDITION,
          details: 'this node is already recovered: its state disk is open and it rejoined its cluster',
        });
      }
      expect(disk.calls).toBe(before + 1);
    } finally {
      releaseDisk();
      releaseKubelet();
      first.close();
      second.close();
    }
    expect(await withTimeout(outcome, 20_000, 'recovery outcome')).toBe('rejoined');
    expect((await node.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(markedPcr15(clusterId));
    expect(node.logger.entries.find((e) => e.message === 'rejoined the cluster')?.fields['source']).toBe('recovery');
  });

  it('once the node has rejoined, the recovery port is closed', async () => {
    const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      const socket = connect(node.recoveryPort, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(undefined);
      });
      socket.once('error', resolve);
    });
    expect(error?.code).toBe('ECONNREFUSED');
    // Only the key that opened the disk reached cryptsetup.
    expect(disk.calls).toBe(1);
  });
});
