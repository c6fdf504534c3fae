import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import { issuerAttester, serveChallenge, serviceServerCredentials } from '@constellation/atls';
import type { ServiceAttester } from '@constellation/atls';
import { createAttestationVerifier, expectedMeasurements, pemCertificatesToDer } from '@constellation/attestation';
import { SoftwareAttester } from '@constellation/attestation/testing';
import { JoinServiceService, JoinTicket } from '@constellation/proto';
import type { IssueJoinTicketRequest, IssueJoinTicketResponse } from '@constellation/proto';
import { waitFor } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JoinClient } from './join-client.js';
import { BOOT, TestNode, startCluster } from './node.fixture.js';
import type { Cluster } from './node.fixture.js';

// Attacker 1 (and attacker 2 on its genuine worker) runs a fake JoinService where the node looks
// for the real one. Its tickets would lock the node's PCR 15 to the attacker's cluster ID and
// re-key the state disk with a key the attacker knows. The node must use none of it.
let cluster: Cluster;
let controlPlane: TestNode;
let attackersWorker: TestNode;

beforeAll(async () => {
  cluster = await startCluster([
    // No control plane runs: the fake JoinService listens on this address, on the host.
    { name: 'control-plane-0', role: 'control-plane', ip: '127.0.0.1' },
    { name: 'worker-1', role: 'worker', ip: '127.0.0.2' },
    { name: 'worker-2', role: 'worker', ip: '127.0.0.3' },
  ]);
  [controlPlane, attackersWorker] = await Promise.all([
    TestNode.create(cluster, 'control-plane-0'),
    TestNode.create(cluster, 'worker-2'),
  ]);
  // The attacker's machine has joined (a cluster), so its PCR 15 is marked.
  await attackersWorker.context.tpm.pcrEvent(15, Buffer.from('attacker cluster'));
}, 60_000);

afterAll(async () => {
  await attackersWorker.stop();
  await controlPlane.stop();
  await cluster.close();
});

/**
 * A JoinService the attacker runs: accepts any genuine node and hands out its own ticket. With
 * `busyFirst` it first refuses for load, as the real service does in a storm, so the node keeps
 * its connection for the next attempt. `peers` records each call's connection (address:port).
 */
async function fakeJoinService(
  attester: ServiceAttester | undefined,
  options: { busyFirst?: boolean } = {},
): Promise<{ issued: number; peers: string[]; close(): void }> {
  const roots = pemCertificatesToDer(await readFile(cluster.ekCa.rootCertPath, 'utf8'));
  const verifier = createAttestationVerifier({ variant: 'tpm2-ek', measurements: new Map(), ekRoots: roots });
  const state = { issued: 0 };
  const peers: string[] = [];
  const server = new grpc.Server();
  server.addService(JoinServiceService, {
    issueJoinTicket: (call: grpc.ServerDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>) => {
      peers.push(call.getPeer());
      if (options.busyFirst === true && peers.length === 1) {
        const metadata = new grpc.Metadata();
        metadata.set('retry-after-ms', '50');
        call.emit('error', { code: grpc.status.RESOURCE_EXHAUSTED, details: 'busy, come back', metadata });
        return;
      }
      serveChallenge(call, {
        validators: [verifier.validator],
        ...(verifier.identity === undefined ? {} : { identity: verifier.identity }),
        ...(attester === undefined ? {} : { serviceAttester: attester }),
        handle: () => {
          state.issued++;
          const ticket = JoinTicket.encode({
            stateDiskKey: Buffer.alloc(32, 0x66),
            diskReceipt: Buffer.alloc(32, 0x77),
            measurementSalt: randomBytes(32),
            measurementSecret: randomBytes(32),
            kubeletClientCert: Buffer.alloc(0),
            kubeletServingCert: Buffer.alloc(0),
            apiServerEndpoint: '127.0.0.1:1',
            controlPlaneFiles: [],
            kubernetesVersion: 'v1.32.9',
            kubernetesComponents: [],
            clusterCaCert: Buffer.alloc(0),
          }).finish();
          return Promise.resolve(Buffer.from(ticket));
        },
      });
    },
    issueRejoinTicket: (call: grpc.ServerDuplexStream<unknown, unknown>) => {
      call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'fake' });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(`127.0.0.1:${cluster.joinServicePort}`, serviceServerCredentials(), (err) => {
      if (err) reject(err);
      else resolve();
    });
  });
  return {
    get issued() {
      return state.issued;
    },
    peers,
    close: () => {
      server.forceShutdown();
    },
  };
}

/** Runs a fresh node's JoinClient against the fake service until it refused it; checks it committed nothing. */
async function freshNodeRefuses(
  name: string,
  attester: ServiceAttester | undefined,
  options: { busyFirst?: boolean; peers?: string[] } = {},
): Promise<string> {
  const fake = await fakeJoinService(attester, options);
  const node = await TestNode.create(cluster, name);
  const firstBootKey = randomBytes(32);
  await node.context.disk.format(firstBootKey);
  let committed = false;
  const client = new JoinClient(node.context, {
    initialBackoffMs: 50,
    maxBackoffMs: 200,
    requestTimeoutMs: 10_000,
    committed: () => (committed = true),
  });
  const outcome = client.run();
  try {
    const refusal = await waitFor(
      () =>
        node.logger.entries.find(
          (e) => e.message === 'no join ticket yet' && String(e.fields['error']).includes('service'),
        )?.fields['error'],
      { timeoutMs: 20_000, description: `${name} to refuse the fake JoinService` },
    );
    await client.stop();
    expect(await outcome).toBe('stopped');
    // Not locked, not re-keyed, nothing written: the node is as fresh as before.
    expect(committed).toBe(false);
    expect(node.context.lock.heldBy).toBeUndefined();
    expect((await node.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(Buffer.alloc(32));
    expect(await node.context.disk.testPassphrase(firstBootKey)).toBe(true);
    expect(await node.context.disk.testPassphrase(Buffer.alloc(32, 0x66))).toBe(false);
    options.peers?.push(...fake.peers);
    return String(refusal);
  } finally {
    await client.stop();
    fake.close();
    await node.stop();
  }
}

describe('a fresh node facing a fake JoinService', () => {
  it('uses nothing from a service that does not attest its host', async () => {
    const refusal = await freshNodeRefuses('worker-1', undefined);
    expect(refusal).toContain(
      'the service did not attest its host: this node joins only through a JoinService on an attested control-plane node',
    );
  });

  it("uses nothing from a service on the attacker's genuine worker", async () => {
    const refusal = await freshNodeRefuses('worker-1', issuerAttester(attackersWorker.context.issuer));
    expect(refusal).toContain(
      'the service is not trusted: its host worker-2 is registered as a worker, not a control-plane node',
    );
  });

  it("uses nothing from a service posing with the control plane's public EK certificate", async () => {
    const soft = new SoftwareAttester({
      claims: new Map([...expectedMeasurements(BOOT, [4, 9]), [15, { expected: randomBytes(32), warnOnly: false }]]),
      stolenIdentity: controlPlane.context.issuer.rooted?.identity,
    });
    const refusal = await freshNodeRefuses('worker-1', {
      description: 'software',
      attest: (userData, nonce) => soft.issue(userData, nonce),
      prove: () => Promise.resolve(randomBytes(32)),
      close: () => undefined,
    });
    expect(refusal).toContain(
      'the service failed attestation: credential activation failed: the attestation key does not live in the TPM that holds the certified endorsement key',
    );
  });

  it('uses nothing from a service that refuses for load and then, on the connection the node kept, serves without attesting its host', async () => {
    const peers: string[] = [];
    const refusal = await freshNodeRefuses('worker-1', undefined, { busyFirst: true, peers });
    expect(refusal).toContain(
      'the service did not attest its host: this node joins only through a JoinService on an attested control-plane node',
    );
    // The switch happened on the kept connection: the refused call and the next share it.
    expect(peers.length).toBeGreaterThanOrEqual(2);
    expect(peers[1]).toBe(peers[0]);
  });
});
