import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { serviceChannelCredentials } from '@constellation/atls';
import { componentDigest, expectedMeasurements } from '@constellation/attestation';
import { deriveClusterId, deriveMeasurementSecret, deriveStateDiskKey } from '@constellation/keys';
import { MemoryLogger } from '@constellation/logger/testing';
import { HealthCheckResponse_ServingStatus, HealthClient } from '@constellation/proto';
import { waitFor } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLUSTER_START_TIMEOUT_MS, CLUSTER_STOP_TIMEOUT_MS } from './join-service-cluster.fixture.js';
import { BOOT, CLUSTER, MEASURED_PCRS, rpcFailure, startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';

const logger = new MemoryLogger();
let fixture: JoinFixture;
let worker: SimulatedNode;
const nodes: SimulatedNode[] = [];

beforeAll(async () => {
  fixture = await startJoinFixture(logger);
  worker = await fixture.node('worker-1', '10.42.0.3');
  nodes.push(worker);
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
  await fixture.close();
}, CLUSTER_STOP_TIMEOUT_MS);

/** The bootstrap-token Secrets in kube-system, read from the real API server. */
const tokenSecrets = async (): Promise<string[]> =>
  (await fixture.cluster.bootstrapTokenSecrets()).map((s) => s.metadata?.name ?? '').sort();

async function metric(name: string): Promise<string> {
  const text = await (await fetch(`http://127.0.0.1:${fixture.service.metricsPort}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(name))
    .join('\n');
}

describe('JoinService with real swtpm nodes and the real control plane', () => {
  it('gives an attested worker a complete ticket and writes nothing to the cluster: no bootstrap token, the CA to trust the API server by', async () => {
    const tokensBefore = await tokenSecrets();
    const { ticket } = await worker.requestJoin(fixture.client);
    // The node joins by kubeadm's file discovery with its own kubelet certificate: no credential in
    // the cluster's name exists for it, and so none that could outlive the join or be reused.
    expect(await tokenSecrets()).toEqual(tokensBefore);
    expect(ticket.clusterCaCert.toString()).toBe(fixture.caCertificatePem);

    // Keys come from the cluster's master secret, so the node's cluster ID matches everyone's.
    expect(ticket.stateDiskKey).toEqual(
      deriveStateDiskKey(fixture.masterSecret.key, fixture.masterSecret.salt, worker.diskUuid, worker.ekPublicKeyHash),
    );
    const measurementSecret = deriveMeasurementSecret(fixture.masterSecret.key, fixture.masterSecret.salt);
    expect(ticket.measurementSecret).toEqual(measurementSecret);
    expect(deriveClusterId(ticket.measurementSecret, ticket.measurementSalt)).toEqual(
      deriveClusterId(measurementSecret, fixture.measurementSalt),
    );
    expect(ticket).toMatchObject({
      apiServerEndpoint: fixture.cluster.apiServerEndpoint,
      kubernetesVersion: CLUSTER.kubernetesVersion,
      kubernetesComponents: CLUSTER.components,
      controlPlaneFiles: [],
    });
  });

  // The two signer profiles of pkg/apis/certificates/helpers.go: ValidateKubeletClientCSR
  // (kube-apiserver-client-kubelet) and ValidateKubeletServingCSR (kubelet-serving).
  it('issues a kubelet client and a serving certificate with the real profiles, chained to the CA, and sends the CA they chain to', async () => {
    const { ticket, clientKeyPem, servingKeyPem } = await worker.requestJoin(fixture.client);
    const ca = new X509Certificate(fixture.caCertificatePem);
    const client = new X509Certificate(ticket.kubeletClientCert);
    const serving = new X509Certificate(ticket.kubeletServingCert);
    for (const cert of [client, serving]) {
      expect(cert.checkIssued(ca)).toBe(true);
      expect(cert.verify(ca.publicKey)).toBe(true);
      expect(cert.subject).toBe('O=system:nodes\nCN=system:node:worker-1');
      expect(cert.ca).toBe(false);
    }
    // Node's X509Certificate.keyUsage lists the extended key usages.
    expect(client.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(client.subjectAltName).toBeUndefined();
    expect(client.checkPrivateKey(createPrivateKey(clientKeyPem))).toBe(true);
    expect(serving.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(serving.subjectAltName).toBe('DNS:worker-1, IP Address:10.42.0.3');
    expect(serving.checkPrivateKey(createPrivateKey(servingKeyPem))).toBe(true);
    // The real control plane's CA, as the host has it: kube-apiserver trusts what it signed.
    expect(ticket.clusterCaCert.toString()).toBe(await readFile(join(fixture.cluster.pkiDir, 'ca.crt'), 'utf8'));
  });

  it('refuses a node with a modified bootstrapper, naming the PCR, and leaves no token behind', async () => {
    const tampered = await fixture.node('worker-evil', '10.42.0.66', {
      boot: [BOOT[0]!, { ...BOOT[1]!, digest: componentDigest('bootstrapper bundle v1 + backdoor') }],
    });
    nodes.push(tampered);
    const tokens = await tokenSecrets();
    const failure = await rpcFailure(tampered.requestJoin(fixture.client));
    expect(failure.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(failure.details).toMatch(
      /^attestation rejected: measurements do not match: PCR 9: expected [0-9a-f]{64}, actual [0-9a-f]{64}; node measured: bootstrapper bundle/,
    );
    expect(await tokenSecrets()).toEqual(tokens);
    expect(await metric('constellation_joinservice_attestation_failures_total')).toContain(
      'reason="attestation:measurements"',
    );
    expect(
      logger.entries.some(
        (e) => e.message === 'challenge refused' && e.fields['reason'] === 'attestation:measurements',
      ),
    ).toBe(true);
  });

  it('refuses a forged CSR before creating any token', async () => {
    const tokens = await tokenSecrets();
    const { createKubeletCsr } = await import('@constellation/keys');
    const forged = (await createKubeletCsr('worker-1', [])).csrDer;
    forged[forged.length - 3]! ^= 0xff;
    const failure = await rpcFailure(worker.requestJoin(fixture.client, { clientCsrDer: forged }));
    expect(failure).toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'kubelet client certificate request refused: certificate request signature does not verify',
    });
    expect(await tokenSecrets()).toEqual(tokens);
  });

  it('sends the shared PKI to control-plane nodes only', async () => {
    const cp = await fixture.node('control-plane-2', '10.42.0.10');
    nodes.push(cp);
    const { ticket } = await cp.requestJoin(fixture.client, { controlPlane: true });
    expect(ticket.controlPlaneFiles.map((f) => f.name).sort()).toEqual([
      'ca.crt',
      'ca.key',
      'etcd/ca.crt',
      'etcd/ca.key',
      'front-proxy-ca.crt',
      'front-proxy-ca.key',
      'sa.key',
      'sa.pub',
    ]);
    expect(ticket.controlPlaneFiles.find((f) => f.name === 'ca.crt')?.data.toString()).toBe(fixture.caCertificatePem);
    // Each file is the running control plane's own, as kubeadm generated it.
    for (const file of ticket.controlPlaneFiles) {
      expect(Buffer.from(file.data).equals(await readFile(join(fixture.cluster.pkiDir, file.name))), file.name).toBe(
        true,
      );
    }
  });

  it("issues rejoin tickets with the disk key for the node's disk", async () => {
    const ticket = await worker.requestRejoin(fixture.client);
    expect(ticket.stateDiskKey).toEqual(
      deriveStateDiskKey(fixture.masterSecret.key, fixture.masterSecret.salt, worker.diskUuid, worker.ekPublicKeyHash),
    );
    expect(ticket.measurementSalt).toEqual(fixture.measurementSalt);
  });

  it('answers Kubernetes gRPC health probes and serves metrics', async () => {
    const client = new HealthClient(`127.0.0.1:${fixture.service.port}`, serviceChannelCredentials());
    const status = await new Promise<unknown>((resolve, reject) => {
      client.check({ service: 'constellation.join.v1.JoinService' }, (err, res) => {
        if (err) reject(err);
        else resolve(res);
      });
    });
    client.close();
    expect(status).toEqual({ status: HealthCheckResponse_ServingStatus.SERVING });
    expect(await metric('constellation_joinservice_tickets_total')).toMatch(
      /kind="join",role="worker",outcome="issued"} \d+/,
    );
    expect(await metric('constellation_joinservice_ticket_seconds_count')).toMatch(/\d+/);
    expect(await metric('constellation_joinservice_tls_handshake_seconds_count')).toMatch(
      /^constellation_joinservice_tls_handshake_seconds_count [1-9]\d*$/m,
    );
    // The kernel's accept queue of the join port, read at the scrape: nothing waits in it here.
    expect(await metric('constellation_joinservice_accept_queue_connections')).toMatch(
      /^constellation_joinservice_accept_queue_connections 0$/m,
    );
  });
});

describe('JoinService measurements', () => {
  it('picks up a changed measurements file without a restart, and ignores a broken one', async () => {
    const generation = fixture.service.measurements.loadedGeneration;
    // New measurements that the current nodes do not meet.
    await fixture.writeMeasurements(
      expectedMeasurements([{ ...BOOT[1]!, digest: componentDigest('bootstrapper bundle v2') }], MEASURED_PCRS),
    );
    await waitFor(() => fixture.service.measurements.loadedGeneration > generation, {
      timeoutMs: 5_000,
      description: 'the new measurements to load',
    });
    expect((await rpcFailure(worker.requestJoin(fixture.client))).code).toBe(grpc.status.PERMISSION_DENIED);

    const reloaded = fixture.service.measurements.loadedGeneration;
    const failures = async (): Promise<number> =>
      Number(/ (\d+)$/.exec(await metric('constellation_joinservice_measurements_reload_failures_total'))?.[1] ?? 0);
    // The poller may also catch a file half written (a not-valid-JSON refusal of its own), so wait
    // for the refusal this test is about rather than for a count.
    const refused = (text: string): Promise<unknown> =>
      waitFor(
        () =>
          logger.entries.some(
            (e) =>
              e.message === 'measurements file rejected; keeping the last good measurements' &&
              String(e.fields['error']).includes(text),
          ),
        { timeoutMs: 5_000, description: `the file to be refused for "${text}"` },
      );
    const before = await failures();
    await fixture.writeMeasurements('{"measurements": {"9": {"expected": "not hex"}}}');
    await refused('measurements.9.expected');
    expect(fixture.service.measurements.loadedGeneration).toBe(reloaded);
    expect(await failures()).toBeGreaterThan(before);

    // Found on main: an empty set was loaded, and then every document passed. Now it is refused,
    // counted, and the last good set stays.
    const counted = await failures();
    await fixture.writeMeasurements('{"measurements": {}}');
    await refused('the measurements must not be empty: an empty set would accept any machine');
    expect(fixture.service.measurements.loadedGeneration).toBe(reloaded);
    expect(await failures()).toBeGreaterThan(counted);
    expect((await rpcFailure(worker.requestJoin(fixture.client))).code).toBe(grpc.status.PERMISSION_DENIED);

    // Back to the real measurements: the node joins again.
    await fixture.writeMeasurements(expectedMeasurements(BOOT, MEASURED_PCRS));
    await waitFor(() => fixture.service.measurements.loadedGeneration > reloaded, {
      timeoutMs: 5_000,
      description: 'measurements to load again',
    });
    await expect(worker.requestJoin(fixture.client)).resolves.toBeDefined();
    expect(await metric('constellation_joinservice_measurements_generation')).toMatch(
      new RegExp(`generation ${fixture.service.measurements.loadedGeneration}$`),
    );
  });

  it('follows a ConfigMap-style atomic symlink swap', async () => {
    const { mkdir, symlink, rename, rm } = await import('node:fs/promises');
    const dir = join(fixture.dir.path, 'config');
    // Turn the plain file into ConfigMap layout: attestationConfig -> ..data/attestationConfig.
    await mkdir(join(dir, '..v1'));
    const zero = { expected: '00'.repeat(32) };
    await writeFile(
      join(dir, '..v1', 'attestationConfig'),
      JSON.stringify({ measurements: { '9': { expected: 'bb'.repeat(32) }, '15': zero } }),
    );
    await symlink('..v1', join(dir, '..data'));
    await rm(join(dir, 'attestationConfig'));
    await symlink(join('..data', 'attestationConfig'), join(dir, 'attestationConfig'));
    const generation = fixture.service.measurements.loadedGeneration;
    await waitFor(() => fixture.service.measurements.loadedGeneration > generation, {
      timeoutMs: 5_000,
      description: 'symlinked file to load',
    });
    expect([...fixture.service.measurements.current().keys()]).toEqual([9, 15]);
    // The kubelet writes a new version directory and renames a new ..data link over the old one.
    await mkdir(join(dir, '..v2'));
    await writeFile(
      join(dir, '..v2', 'attestationConfig'),
      JSON.stringify({ measurements: { '4': { expected: 'aa'.repeat(32) }, '15': zero } }),
    );
    await symlink('..v2', join(dir, '..data_tmp'));
    await rename(join(dir, '..data_tmp'), join(dir, '..data'));
    const swapped = fixture.service.measurements.loadedGeneration;
    await waitFor(() => fixture.service.measurements.loadedGeneration > swapped, {
      timeoutMs: 5_000,
      description: 'swapped ConfigMap to load',
    });
    expect([...fixture.service.measurements.current().keys()]).toEqual([4, 15]);
    await fixture.writeMeasurements(expectedMeasurements(BOOT, MEASURED_PCRS));
  });
});
