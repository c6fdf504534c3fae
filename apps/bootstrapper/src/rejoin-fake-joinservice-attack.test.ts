import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import { serveChallenge, serviceServerCredentials } from '@constellation/atls';
import { createAttestationVerifier, pemCertificatesToDer } from '@constellation/attestation';
import { deriveMeasurementSecret, deriveStateDiskKey } from '@constellation/keys';
import { JoinServiceService, RejoinTicket } from '@constellation/proto';
import type { IssueRejoinTicketRequest, IssueRejoinTicketResponse } from '@constellation/proto';
import { withTimeout } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestNode, initRequest, startCluster } from './node.fixture.js';
import type { Cluster } from './node.fixture.js';

/*
 * Attacker 1 (network access, no TPM, no master secret) answers a rebooting member's rejoin where
 * the node asks first, at the cluster endpoint (the load balancer's address), while a genuine
 * JoinService runs on another control plane. A node does not check a rejoin service's host (a
 * rejoin key proves itself by opening the disk), so the fake can hand it any ticket. Red-team
 * finding: the node ran its disk's cryptsetup check (memory-hard argon2id in production) on
 * every fake ticket before the free cluster-ID check, and, the first endpoint having answered,
 * asked it again and again and never the genuine JoinService: the node stayed out of the cluster
 * for as long as the fake answered.
 */
let cluster: Cluster;
let node: TestNode;
/** What beforeAll started, stopped last started first even when it failed half-way. */
const started: (() => Promise<void>)[] = [];
const request = initRequest();
const services: grpc.Server[] = [];

/** A JoinService that answers every rejoin with `ticket()`; counts its answers. */
async function rejoinService(host: string, ticket: () => RejoinTicket): Promise<{ issued: number }> {
  const roots = pemCertificatesToDer(await readFile(cluster.ekCa.rootCertPath, 'utf8'));
  const verifier = createAttestationVerifier({ variant: 'tpm2-ek', measurements: new Map(), ekRoots: roots });
  const counts = { issued: 0 };
  const server = new grpc.Server();
  server.addService(JoinServiceService, {
    issueJoinTicket: (call: grpc.ServerDuplexStream<unknown, unknown>) => {
      call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'fake' });
    },
    issueRejoinTicket: (call: grpc.ServerDuplexStream<IssueRejoinTicketRequest, IssueRejoinTicketResponse>) => {
      serveChallenge(call, {
        validators: [verifier.validator],
        ...(verifier.identity === undefined ? {} : { identity: verifier.identity }),
        handle: () => {
          counts.issued++;
          return Promise.resolve(Buffer.from(RejoinTicket.encode(ticket()).finish()));
        },
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(`${host}:${cluster.joinServicePort}`, serviceServerCredentials(), (err) => {
      if (err) reject(err);
      else resolve();
    });
  });
  services.push(server);
  return counts;
}

beforeAll(async () => {
  cluster = await startCluster([
    { name: 'control-plane-0', role: 'control-plane' },
    { name: 'control-plane-1', role: 'control-plane', ip: '127.0.0.2' },
  ]);
  started.push(() => cluster.close());
  // A real machine: the node runs kubeadm init, and its kubelet again once it has its keys.
  node = await TestNode.create(cluster, 'control-plane-0', { machine: true });
  started.push(() => node.stop());
  await node.initialise(request);
  await node.reboot();
  // The cluster's endpoint (its load balancer) now leads to the host's 127.0.0.1, where the test's
  // fake JoinService listens: the first endpoint the rebooted member tries.
  cluster.metadata.update((doc) => ({ ...doc, endpoint: { ...doc.endpoint, host: '127.0.0.1' } }));
}, 170_000);

afterAll(async () => {
  for (const server of services) server.forceShutdown();
  for (const stop of started.splice(0).reverse()) await stop();
}, 120_000);

describe('a rebooting member whose first JoinService endpoint is a fake', () => {
  it("spends no disk check on the fake's tickets and rejoins through the genuine JoinService behind it", async () => {
    const fake = await rejoinService('127.0.0.1', () => ({
      stateDiskKey: randomBytes(32),
      measurementSecret: randomBytes(32),
      measurementSalt: randomBytes(32),
    }));
    const diskUuid = await node.context.disk.uuid();
    const genuine = await rejoinService('127.0.0.2', () => ({
      stateDiskKey: deriveStateDiskKey(
        request.masterSecret,
        request.masterSalt,
        diskUuid,
        node.context.issuer.rooted?.ekPublicKeyHash,
      ),
      measurementSecret: deriveMeasurementSecret(request.masterSecret, request.masterSalt),
      measurementSalt: request.measurementSalt,
    }));
    let diskChecks = 0;
    const testPassphrase = node.context.disk.testPassphrase.bind(node.context.disk);
    node.context.disk.testPassphrase = (passphrase) => {
      diskChecks++;
      return testPassphrase(passphrase);
    };
    const outcome = node.bootstrapper().run();
    expect(await withTimeout(outcome, 20_000, 'the rejoin through the genuine JoinService')).toBe('rejoined');
    expect(fake.issued).toBeGreaterThanOrEqual(1);
    expect(genuine.issued).toBe(1);
    // The genuine ticket's key, checked once; the fake's were refused on the cluster ID alone.
    expect(diskChecks).toBe(1);
    const refusal = node.logger.entries.find((e) => e.message === 'rejoin ticket refused');
    expect(refusal?.fields).toMatchObject({
      endpoint: `127.0.0.1:${String(cluster.joinServicePort)}`,
      reason: "its measurement secret does not give this node's cluster ID",
    });
  });
});
