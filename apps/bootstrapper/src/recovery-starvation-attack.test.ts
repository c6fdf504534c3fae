import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { deriveMeasurementSecret, deriveStateDiskKey } from '@constellation/keys';
import { readRetryAfter } from '@constellation/proto';
import type { RecoveryServiceClient } from '@constellation/proto';
import type { RecoverRequest, RecoverResponse } from '@constellation/proto';
import { sleep, waitFor, withTimeout } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestNode, initRequest, startCluster } from './node.fixture.js';
import type { BootstrapOutcome, Cluster } from './node.fixture.js';

/*
 * Attacker 2 (the owner of one genuine member, say a worker) knows the cluster's measurement
 * secret from its own join ticket, so its Recover calls pass the free cluster-ID check of a
 * control plane waiting for `constellation recover` after a full control-plane shutdown. Red-team
 * finding: each call with a made-up disk key then ran the disk's cryptsetup check (argon2id in
 * production: seconds and hundreds of MiB), one at a time, and every other call meanwhile was
 * told "busy, retry": a few looping callers kept the check busy, the operator's recover got
 * UNAVAILABLE on every attempt, and the cluster stayed down.
 */
let cluster: Cluster;
let node: TestNode;
/** What beforeAll started, stopped last started first even when it failed half-way. */
const started: (() => Promise<void>)[] = [];
let outcome: Promise<BootstrapOutcome>;
const request = initRequest();
const measurementSecret = deriveMeasurementSecret(request.masterSecret, request.masterSalt);
let diskChecks = 0;

async function recoveryClient(): Promise<RecoveryServiceClient> {
  return (await node.recoveryClient()).client;
}

function recover(client: RecoveryServiceClient, body: RecoverRequest): Promise<RecoverResponse> {
  return new Promise((resolve, reject) => {
    client.recover(body, new grpc.Metadata(), { deadline: Date.now() + 20_000 }, (err, res) => {
      if (err) reject(err);
      else resolve(res);
    });
  });
}

beforeAll(async () => {
  cluster = await startCluster([{ name: 'control-plane-0', role: 'control-plane' }]);
  started.push(() => cluster.close());
  // A real machine: the node runs kubeadm init, and its kubelet again once it has its keys.
  node = await TestNode.create(cluster, 'control-plane-0', { machine: true });
  started.push(() => node.stop());
  await node.initialise(request);
  await node.reboot();
  const testPassphrase = node.context.disk.testPassphrase.bind(node.context.disk);
  node.context.disk.testPassphrase = (passphrase) => {
    diskChecks++;
    return testPassphrase(passphrase);
  };
  outcome = node.bootstrapper().run();
  await waitFor(() => node.recoveryPort > 0, { timeoutMs: 20_000, description: 'the recovery server' });
}, 170_000);

afterAll(async () => {
  for (const stop of started.splice(0).reverse()) await stop();
}, 120_000);

describe("a member's owner looping Recover calls with the cluster's measurement secret", () => {
  it("costs the node no disk check, and the operator's recover gets through", async () => {
    const attackers = [await recoveryClient(), await recoveryClient(), await recoveryClient()];
    const operator = await recoveryClient();
    let attacking = true;
    const refusals = new Set<string>();
    const loops = attackers.flatMap((client) =>
      [0, 1].map(async () => {
        while (attacking) {
          await recover(client, { stateDiskKey: randomBytes(32), measurementSecret }).catch((err: unknown) => {
            refusals.add((err as grpc.ServiceError).details);
          });
        }
      }),
    );
    try {
      await sleep(200);
      const body = {
        stateDiskKey: deriveStateDiskKey(
          request.masterSecret,
          request.masterSalt,
          await node.context.disk.uuid(),
          node.context.issuer.rooted?.ekPublicKeyHash,
        ),
        measurementSecret,
      };
      // As `constellation recover` does: five attempts, each after the retry-after the node gave.
      let answer: RecoverResponse | undefined;
      let last: unknown;
      for (let attempt = 0; attempt < 5 && answer === undefined; attempt++) {
        try {
          answer = await recover(operator, body);
        } catch (err) {
          last = err;
          await sleep(readRetryAfter(err) ?? 1_000);
        }
      }
      expect(
        answer,
        `the operator's recover failed: ${String((last as grpc.ServiceError | undefined)?.details)}`,
      ).toEqual({ diskUuid: await node.context.disk.uuid(), clusterIdHex: expect.any(String) as unknown });
    } finally {
      attacking = false;
      await Promise.all(loops);
      for (const client of [...attackers, operator]) client.close();
    }
    expect(refusals).toContain(
      `this key does not open state disk ${await node.context.disk.uuid()} of this node (it fails the key check in the disk's header; the measurement secret is this cluster's: was the key derived for another disk or machine?)`,
    );
    // Only the operator's key reached cryptsetup.
    expect(diskChecks).toBe(1);
    expect(await withTimeout(outcome, 20_000, 'recovery outcome')).toBe('rejoined');
  });
});
