import { X509Certificate, createPrivateKey, randomBytes } from 'node:crypto';
import { rm, stat, writeFile } from 'node:fs/promises';
import { connect } from 'node:tls';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as k8s from '@kubernetes/client-node';
import { AttestedChannelCredentials } from '@constellation/atls';
import { TpmValidator, componentDigest, expectedMeasurements, machineIdOf } from '@constellation/attestation';
import {
  deriveClusterId,
  deriveMeasurementSecret,
  deriveStateDiskKey,
  isDiskReceipt,
  markedPcr15,
} from '@constellation/keys';
import {
  diskBindingName,
  nodeAddressBindingName,
  nodeNameBindingName,
  parseClusterConfig,
} from '@constellation/kubeadm';
import { InitServiceClient, InitStep, StepState } from '@constellation/proto';
import { readFile } from 'node:fs/promises';
import { sleep, waitFor, withTimeout } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import type { BootstrapOutcome } from './bootstrapper.js';
import { MAX_SECRET_CHECKS } from './init-admission.js';
import {
  BOOT,
  MEASUREMENTS,
  TestNode,
  callInit,
  initRequest,
  instanceIp,
  kubernetesRelease,
  startCluster,
  startJoinServiceProcess,
} from './node.fixture.js';
import type { Cluster } from './node.fixture.js';
import { errorMessage } from '@constellation/errors';
import { apiFailure } from './api-failure.fixture.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The certificate a TLS server at host:port presents. */
function servedCertificate(host: string, port: number): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, rejectUnauthorized: false, timeout: 5_000 }, () => {
      const peer = socket.getPeerX509Certificate();
      socket.destroy();
      if (peer === undefined) reject(new Error(`${host}:${port} presented no certificate`));
      else resolve(peer);
    });
    socket.once('timeout', () => socket.destroy(new Error(`${host}:${port} did not answer within 5 s`)));
    socket.once('error', reject);
  });
}

async function freshNode(
  options: Parameters<typeof TestNode.create>[2] = {},
): Promise<{ cluster: Cluster; node: TestNode; outcome: Promise<BootstrapOutcome> }> {
  // The node's address is its network namespace's; with a machine, its control plane runs there.
  const cluster = await startCluster([{ name: 'control-plane-0', role: 'control-plane' }]);
  cleanups.push(() => cluster.close());
  const node = await TestNode.create(cluster, 'control-plane-0', options);
  cleanups.push(() => node.stop());
  const outcome = node.bootstrapper().run();
  outcome.catch(() => undefined);
  await waitFor(() => node.initPort > 0, { timeoutMs: 20_000, description: 'the InitServer to listen' });
  return { cluster, node, outcome };
}

describe('InitServer on a real swtpm and LUKS2 image, initialising a real node (kubeadm, kubelet, containerd)', () => {
  it('initialises the cluster: progress for every step, PCR 15 marked, disk re-keyed, working kubeconfig', async () => {
    // The node image tunes kube-proxy, and this init (not in conformance mode) runs none.
    const { cluster, node, outcome } = await freshNode({ machine: true, kubeProxyConfig: { mode: 'nftables' } });
    const nodeIp = instanceIp(cluster, 'control-plane-0');
    const request = initRequest();
    const { messages, error, identityError } = await callInit(node, request);
    expect(identityError).toBeUndefined();
    expect(error).toBeUndefined();
    const steps = messages.flatMap((m) =>
      m.kind?.$case === 'progress' && m.kind.value.state === StepState.STEP_STATE_SUCCEEDED ? [m.kind.value.step] : [],
    );
    expect(steps).toEqual([
      InitStep.INIT_STEP_CHECK_INIT_SECRET,
      InitStep.INIT_STEP_DERIVE_KEYS,
      InitStep.INIT_STEP_LOCK_NODE,
      InitStep.INIT_STEP_REKEY_STATE_DISK,
      InitStep.INIT_STEP_WRITE_NODE_STATE,
      InitStep.INIT_STEP_PREPARE_NODE,
      InitStep.INIT_STEP_KUBEADM_INIT,
      InitStep.INIT_STEP_WAIT_FOR_API_SERVER,
      InitStep.INIT_STEP_PUBLISH_CLUSTER_CONFIG,
      InitStep.INIT_STEP_ISSUE_ADMIN_KUBECONFIG,
    ]);
    // Without conformance mode there is no kube-proxy, and the step says so, and that the node
    // image's kube-proxy settings are not used (they were dropped silently).
    const kubeadmInitDone = messages.find(
      (m) =>
        m.kind?.$case === 'progress' &&
        m.kind.value.step === InitStep.INIT_STEP_KUBEADM_INIT &&
        m.kind.value.state === StepState.STEP_STATE_SUCCEEDED,
    )?.kind;
    expect(kubeadmInitDone?.$case === 'progress' ? kubeadmInitDone.value.detail : undefined).toBe(
      "without kube-proxy; the node image's --kube-proxy-config is not used",
    );
    const last = messages.at(-1)?.kind;
    if (last?.$case !== 'success') throw new Error('no success message');
    const clusterId = deriveClusterId(
      deriveMeasurementSecret(request.masterSecret, request.masterSalt),
      request.measurementSalt,
    );
    expect(last.value.clusterId).toEqual(clusterId);
    expect(await withTimeout(outcome, 10_000, 'bootstrapper outcome')).toBe('initialized');

    expect((await node.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(markedPcr15(clusterId));
    const uuid = await node.context.disk.uuid();
    expect(
      await node.context.disk.testPassphrase(
        deriveStateDiskKey(request.masterSecret, request.masterSalt, uuid, node.context.issuer.rooted?.ekPublicKeyHash),
      ),
    ).toBe(true);
    expect(await node.context.disk.isInitialized()).toBe(true);
    await expect(readFile(node.context.paths.initialDiskKey)).rejects.toThrow(); // first-boot passphrase gone

    const kubeconfig = join(node.root, 'returned.conf');
    await writeFile(kubeconfig, last.value.kubeconfig);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kubeconfig);
    const nodes = await kc.makeApiClient(k8s.CoreV1Api).listNode();
    expect(nodes.items.map((n) => n.metadata?.name)).toEqual(['control-plane-0']);
    const published = await kc
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedConfigMap({ namespace: 'kube-system', name: 'constellation-cluster' });
    expect(published.data?.['kubernetesVersion']).toBe(kubernetesRelease());
    // With the names and addresses the API server's certificate carries, which the JoinService
    // puts in no worker's kubelet serving certificate.
    const { apiServer } = parseClusterConfig(published.data);
    expect(apiServer?.dnsNames).toEqual(
      expect.arrayContaining(['control-plane-0', 'kubernetes.default.svc.cluster.local']),
    );
    expect(apiServer?.ips).toEqual(expect.arrayContaining(['10.96.0.1', nodeIp, '127.0.0.1']));
    // Exactly what the API server's certificate carries (real kubeadm's certs phase made it).
    const apiServerCertificate = new X509Certificate(
      await readFile(join(node.context.paths.kubernetesPki, 'apiserver.crt')),
    );
    expect(new Set(apiServerCertificate.subjectAltName?.split(', '))).toEqual(
      new Set([
        ...(apiServer?.dnsNames ?? []).map((n) => `DNS:${n}`),
        ...(apiServer?.ips ?? []).map((ip) => `IP Address:${ip}`),
      ]),
    );
    // Its name and address are this machine's, as a bare-metal join would record them: no machine
    // joins as it later, nor gets a serving certificate for its address.
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const ekPublicKeyHash = node.context.issuer.rooted?.ekPublicKeyHash;
    const nameBinding = await core.readNamespacedConfigMap({
      namespace: 'kube-system',
      name: nodeNameBindingName('control-plane-0'),
    });
    expect(nameBinding.data).toEqual({ nodeName: 'control-plane-0', ekPublicKeyHash });
    const addressBinding = await core.readNamespacedConfigMap({
      namespace: 'kube-system',
      name: nodeAddressBindingName(nodeIp),
    });
    expect(addressBinding.data).toEqual({ nodeName: 'control-plane-0', ekPublicKeyHash, address: nodeIp });
    expect(node.kubeletStarts).toBe(1);
  });

  it('an unrooted (qemu-vtpm) node records its disk under the id the JoinService knows it by, claims no name or address, and rejoins after a reboot', async () => {
    const { cluster, node, outcome } = await freshNode({ unrooted: true, machine: true });
    const request = initRequest();
    const { messages, error } = await callInit(node, request);
    expect(error).toBeUndefined();
    const last = messages.at(-1)?.kind;
    if (last?.$case !== 'success') throw new Error('no success message');
    expect(await withTimeout(outcome, 10_000, 'bootstrapper outcome')).toBe('initialized');
    const kubeconfig = join(node.root, 'returned.conf');
    await writeFile(kubeconfig, last.value.kubeconfig);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kubeconfig);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    // The JoinService knows an unrooted machine by its attestation key (machineIdOf): after a
    // reboot, the rejoin ticket's check (ticket-service.ts) takes the receipt init kept in the
    // disk's header for it, and the ticket's key (derived without an EK hash) opens the disk init
    // re-keyed. Init records no disk in the API.
    const machine = await machineIdOf(node.context.issuer);
    expect(machine).toMatch(/^ak-[0-9a-f]+$/);
    const uuid = await node.context.disk.uuid();
    const receipt = await node.context.disk.diskReceipt();
    expect(receipt && isDiskReceipt(receipt, request.masterSecret, request.masterSalt, uuid, machine)).toBe(true);
    const recorded = await apiFailure(
      core.readNamespacedConfigMap({ namespace: 'kube-system', name: diskBindingName(uuid, machine) }),
    );
    expect(recorded.code).toBe(404);
    const rejoinKey = deriveStateDiskKey(request.masterSecret, request.masterSalt, uuid, undefined);
    expect(await node.context.disk.testPassphrase(rejoinKey)).toBe(true);
    // It proves no identity, so it claims nothing a bare-metal join by a proven machine would be refused for.
    for (const name of [
      nodeNameBindingName('control-plane-0'),
      nodeAddressBindingName(instanceIp(cluster, 'control-plane-0')),
    ]) {
      const failure = await apiFailure(core.readNamespacedConfigMap({ namespace: 'kube-system', name }));
      expect(failure.code, name).toBe(404);
    }
    // Rebooted, it rejoins through a qemu-vtpm JoinService (a peer control plane's, in a real
    // cluster) that finds its disk under the same id. That peer's API server is this node's: its
    // machine keeps running, only its TPM power-cycles.
    const joinService = await startJoinServiceProcess(cluster, node, request, { attestationVariant: 'qemu-vtpm' });
    cleanups.push(() => joinService.stop());
    await node.reboot({ machine: false });
    expect(await withTimeout(node.bootstrapper().run(), 60_000, 'rejoin')).toBe('rejoined');
    expect(node.logger.entries.find((e) => e.message === 'rejoined the cluster')?.fields['source']).toBe(
      'rejoin-ticket',
    );
    expect(node.fatalErrors).toEqual([]);
  }, 150_000);

  // Item: the kubelet kubeadm init starts reads KubeletConfiguration tlsCertFile/tlsPrivateKeyFile
  // at start-up, and with server certificate reload (feature gate ReloadKubeletServerCertificateFile,
  // on since 1.31) it fails when they are missing: kubeadm init would then wait for it in vain. The
  // real kubelet serves the certificate the bootstrapper wrote.
  it("writes the first node's serving certificate where the KubeletConfiguration points, before kubeadm init, from the cluster CA", async () => {
    const { cluster, node, outcome } = await freshNode({ machine: true });
    const { error } = await callInit(node, initRequest());
    expect(error).toBeUndefined();
    expect(await withTimeout(outcome, 10_000, 'outcome')).toBe('initialized');
    // The profile of signer kubernetes.io/kubelet-serving (ValidateKubeletServingCSR,
    // pkg/apis/certificates/helpers.go), from the CA kubeadm used for everything else.
    const serving = new X509Certificate(await readFile(node.context.paths.kubeletServingCert));
    const ca = new X509Certificate(await readFile(join(node.context.paths.kubernetesPki, 'ca.crt')));
    expect(serving.checkIssued(ca) && serving.verify(ca.publicKey)).toBe(true);
    expect(serving.subject).toBe('O=system:nodes\nCN=system:node:control-plane-0');
    expect(serving.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    const nodeIp = instanceIp(cluster, 'control-plane-0');
    expect(serving.subjectAltName).toBe(`DNS:control-plane-0, IP Address:${nodeIp}`);
    expect(serving.checkPrivateKey(createPrivateKey(await readFile(node.context.paths.kubeletServingKey)))).toBe(true);
    // The node's kubelet serves it on its port (10250, in the node's network namespace), which it
    // opens a moment after kubeadm saw it healthy.
    const served = await waitFor(() => servedCertificate(nodeIp, 10250), {
      timeoutMs: 30_000,
      intervalMs: 250,
      description: "the kubelet's serving port",
    });
    expect(served.fingerprint256).toBe(serving.fingerprint256);
    expect((await stat(node.context.paths.kubeletServingKey)).mode & 0o777).toBe(0o600);
    const admin = new k8s.KubeConfig();
    admin.loadFromFile(node.context.paths.adminConf);
    expect(new X509Certificate(Buffer.from(admin.getCurrentCluster()?.caData ?? '', 'base64')).fingerprint256).toBe(
      ca.fingerprint256,
    );
  });

  it('lets exactly one of ten concurrent Init calls proceed; the others are told the node is being initialised', async () => {
    const { node, outcome } = await freshNode({ machine: true });
    // Ten CLIs connect and verify the node first (a handshake after the winner took the lock would
    // see PCR 15 marked and refuse the node before sending anything), then all call Init at once.
    const clients = Array.from({ length: 10 }, () => {
      const credentials = new AttestedChannelCredentials([new TpmValidator({ measurements: MEASUREMENTS })]);
      return new InitServiceClient(`127.0.0.1:${node.initPort}`, credentials.credentials, credentials.channelOptions);
    });
    await Promise.all(
      clients.map(
        (c) =>
          new Promise<void>((resolve, reject) => {
            c.waitForReady(Date.now() + 20_000, (err) => {
              if (err) reject(err);
              else resolve();
            });
          }),
      ),
    );
    const results = await Promise.all(
      clients.map(
        (client) =>
          new Promise<{ error?: grpc.ServiceError; messages: number }>((resolve) => {
            let messages = 0;
            const stream = client.init(initRequest(), { deadline: Date.now() + 60_000 });
            stream.on('data', () => messages++);
            stream.on('error', (error: grpc.ServiceError) => {
              resolve({ error, messages });
            });
            stream.on('end', () => {
              resolve({ messages });
            });
          }),
      ),
    );
    for (const client of clients) client.close();
    expect(results.filter((r) => r.error === undefined)).toHaveLength(1);
    const refused = results.filter((r) => r.error !== undefined);
    expect(refused).toHaveLength(9);
    // Beyond the init-secret checks the node runs at once (MAX_SECRET_CHECKS), a caller is told to
    // come back; the others are told the node is taken.
    const told = (r: (typeof refused)[number]): string =>
      `${grpc.status[r.error?.code ?? 0] ?? ''}: ${r.error?.details ?? ''}`;
    for (const r of refused) {
      expect([
        'FAILED_PRECONDITION: node is already being initialised',
        'UNAVAILABLE: too many init-secret checks are under way; retry',
      ]).toContain(told(r));
      expect(r.messages).toBe(0);
    }
    expect(refused.filter((r) => r.error?.code === grpc.status.FAILED_PRECONDITION).length).toBeGreaterThanOrEqual(
      MAX_SECRET_CHECKS - 1,
    );
    expect(await withTimeout(outcome, 10_000, 'outcome')).toBe('initialized');
  });

  it('refuses a wrong init secret with no progress and no logs, and stays ready for the right one', async () => {
    const { node, outcome } = await freshNode({ machine: true });
    const wrong = await callInit(node, initRequest({ initSecret: Buffer.from('guess') }));
    expect(wrong.error).toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: 'wrong init secret' });
    expect(wrong.messages).toEqual([]);
    expect(node.context.lock.heldBy).toBeUndefined();
    expect((await node.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(Buffer.alloc(32));
    expect((await callInit(node, initRequest())).error).toBeUndefined();
    expect(await withTimeout(outcome, 10_000, 'outcome')).toBe('initialized');
  });

  it('refuses malformed and oversized requests naming the field, changing nothing', async () => {
    const { node } = await freshNode();
    const cases: [Parameters<typeof initRequest>[0], RegExp][] = [
      [{ masterSecret: Buffer.alloc(4) }, /init request field master_secret: must be 16 to 64 bytes, got 4/],
      [{ measurementSalt: Buffer.alloc(0) }, /init request field measurement_salt: must be 32 bytes, got 0/],
      [{ kubernetesVersion: 'latest' }, /kubernetes_version: must look like v1.32.9/],
      [{ apiserverCertSans: ['not a name!'] }, /apiserver_cert_sans: "not a name!" is neither/],
      [{ initSecret: Buffer.alloc(0) }, /init_secret: must be 1 to 256 bytes/],
      [{ serviceCidr: '10.96.0.0' }, /service_cidr: must be a CIDR like 10.96.0.0\/12/],
      // The API server's service address (published for the JoinService) needs a host address.
      [
        { serviceCidr: '10.96.0.1/32' },
        /service_cidr: must be a CIDR like 10.96.0.0\/12 \(service subnet "10.96.0.1\/32": prefix 32 leaves no host addresses\)/,
      ],
    ];
    for (const [overrides, message] of cases) {
      const result = await callInit(node, initRequest(overrides));
      expect(result.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(result.error?.details).toMatch(message);
    }
    const oversized = await callInit(node, initRequest({ apiserverCertSans: ['x'.repeat(5 * 1024 * 1024)] }));
    expect(oversized.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(node.context.lock.heldBy).toBeUndefined();
    expect(await node.context.disk.isInitialized()).toBe(false);
  });

  it("refuses a Kubernetes version older than the node image's minimum, named or defaulted, changing nothing", async () => {
    // Above the built release, which is what the node defaults to.
    const { node } = await freshNode({ minimumKubernetesVersion: 'v1.99.0' });
    for (const kubernetesVersion of ['v1.31.4', '']) {
      const result = await callInit(node, initRequest({ kubernetesVersion }));
      expect(result.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(result.error?.details).toBe(
        `init request field kubernetes_version: Kubernetes ${kubernetesVersion || kubernetesRelease()} is older than this node image's minimum v1.99.0 (downgrade refused)`,
      );
    }
    expect(node.context.lock.heldBy).toBeUndefined();
    expect(await node.context.disk.isInitialized()).toBe(false);
  });

  it('does not talk to a client that brings no attestation nonce, nor to one whose measurements differ', async () => {
    const { node } = await freshNode();
    const plain = await new Promise<Error | undefined>((resolve) => {
      const socket = connect(
        {
          host: '127.0.0.1',
          port: node.initPort,
          servername: 'node.example',
          rejectUnauthorized: false,
          ALPNProtocols: ['h2'],
        },
        () => {
          socket.destroy();
          resolve(undefined);
        },
      );
      socket.once('error', resolve);
    });
    expect(plain).toBeInstanceOf(Error);
    const tampered = expectedMeasurements(
      [BOOT[0]!, { ...BOOT[1]!, digest: componentDigest('other bundle') }],
      [4, 9, 15],
    );
    const result = await callInit(node, initRequest(), tampered);
    expect(result.messages).toEqual([]);
    expect(errorMessage(result.identityError)).toMatch(/PCR 9: expected/);
    expect(result.credentials.failure?.message).toMatch(/PCR 9: expected/);
    expect(node.context.lock.heldBy).toBeUndefined();
  });

  it('after the point of no return, a kubeadm failure streams logs, marks the disk for reset and triggers the reboot action', async () => {
    const dir = join('/tmp', `failing-kubeadm-${randomBytes(4).toString('hex')}`);
    await writeFile(dir, '#!/bin/sh\necho "[preflight] simulated failure: port 6443 is in use" >&2\nexit 1\n', {
      mode: 0o755,
    });
    cleanups.push(async () => {
      const { rm } = await import('node:fs/promises');
      await rm(dir, { force: true });
    });
    const { node, outcome } = await freshNode({ kubeadm: dir });
    const { messages, error } = await callInit(node, initRequest());
    expect(error?.code).toBe(grpc.status.INTERNAL);
    const failure = messages.find((m) => m.kind?.$case === 'failure')?.kind;
    if (failure?.$case !== 'failure') throw new Error('no failure message');
    expect(failure.value).toMatchObject({ step: InitStep.INIT_STEP_KUBEADM_INIT, retrySafe: false });
    expect(failure.value.error).toMatch(/INIT_STEP_KUBEADM_INIT failed: kubeadm init failed with exit code 1/);
    const logs = Buffer.concat(
      messages.flatMap((m) => (m.kind?.$case === 'log' ? [m.kind.value.data] : [])),
    ).toString();
    expect(logs).toContain('simulated failure: port 6443 is in use');
    expect(messages.at(-1)?.kind?.$case).toBe('logsDone');
    await expect(withTimeout(outcome, 10_000, 'outcome')).rejects.toThrow(/kubeadm init failed/);
    expect(node.fatalErrors).toHaveLength(1);
    expect(await node.context.disk.isInitialized()).toBe(false);
  });

  it("stops when its signal aborts before the point of no return: the InitServer closes, the join client records nothing more, run resolves 'stopped'", async () => {
    const cluster = await startCluster([{ name: 'control-plane-0', role: 'control-plane' }]);
    cleanups.push(() => cluster.close());
    const node = await TestNode.create(cluster, 'control-plane-0');
    cleanups.push(() => node.stop());
    const stopping = new AbortController();
    const outcome = node.bootstrapper({ signal: stopping.signal }).run();
    outcome.catch(() => undefined);
    // No JoinService runs: the join client records each refused attempt.
    const { joinStatus } = node.context.paths;
    await waitFor(
      () =>
        stat(joinStatus).then(
          () => true,
          () => false,
        ),
      {
        timeoutMs: 20_000,
        description: "the join client's first recorded attempt",
      },
    );
    const port = node.initPort;
    stopping.abort();
    expect(await withTimeout(outcome, 10_000, 'outcome')).toBe('stopped');
    const refused = await new Promise<Error | undefined>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
        socket.destroy();
        resolve(undefined);
      });
      socket.once('error', resolve);
    });
    expect(errorMessage(refused)).toMatch(/ECONNREFUSED/);
    await rm(joinStatus);
    // Several of the fixture's join attempts (backoff 50 to 300 ms) would have passed.
    await sleep(1_500);
    expect(
      await stat(joinStatus).then(
        () => 'recorded again',
        () => 'nothing recorded',
      ),
    ).toBe('nothing recorded');
    expect(node.context.lock.heldBy).toBeUndefined();
    expect(node.fatalErrors).toEqual([]);
  });

  it('before the point of no return, a failure is retry-safe: no reset, no reboot, the node keeps serving', async () => {
    const { cluster, node, outcome } = await freshNode({ machine: true });
    const hash = (await (await fetch(`${cluster.metadata.url}/initsecrethash`)).json()) as { initSecretHash: string };
    cluster.metadata.update((doc) => ({ ...doc, initSecretHash: '' }));
    const unavailable = await callInit(node, initRequest());
    expect(unavailable.error?.code).toBe(grpc.status.UNAVAILABLE);
    expect(unavailable.error?.details).toMatch(/cannot check the init secret/);
    expect(node.fatalErrors).toEqual([]);
    cluster.metadata.update((doc) => ({ ...doc, initSecretHash: hash.initSecretHash }));
    expect((await callInit(node, initRequest())).error).toBeUndefined();
    expect(await withTimeout(outcome, 10_000, 'outcome')).toBe('initialized');
  });

  it("reads the node's own metadata before the point of no return: a wrong address or endpoint fails retry-safe, naming the field", async () => {
    const { cluster, node, outcome } = await freshNode({ machine: true });
    const original = await (await fetch(`${cluster.metadata.url}/endpoint`)).json();
    const withIp = (ip: string): void => {
      cluster.metadata.update((doc) => ({ ...doc, instances: doc.instances.map((i) => ({ ...i, ip })) }));
    };
    // Found on main: read only after the node lock, the same answer failed kubeadm's step past the
    // point of no return (disk marked for reset, reboot); so would a metadata service that blinked.
    // A zone index passed the first check and failed after the lock (red-team finding).
    const answers: [() => void, string][] = [
      [
        () => {
          withIp('control-plane-0.example');
        },
        'instance metadata /self: unexpected answer: ip: expected an IP address, got "control-plane-0.example"',
      ],
      [
        () => {
          withIp('fe80::1%eth0');
        },
        'instance metadata /self: unexpected answer: ip: expected an IP address without a zone index, got "fe80::1%eth0"',
      ],
      [
        () => {
          withIp(instanceIp(cluster, 'control-plane-0'));
          cluster.metadata.update((doc) => ({ ...doc, endpoint: { ...doc.endpoint, apiServerPort: 0 } }));
        },
        'instance metadata /endpoint: unexpected answer: apiServerPort: expected an integer from 1 to 65535, got 0',
      ],
      [
        () => {
          cluster.metadata.update((doc) => ({
            ...doc,
            endpoint: { ...doc.endpoint, apiServerPort: 6443, host: 'api server' },
          }));
        },
        'instance metadata /endpoint: unexpected answer: host: expected an IP address or a DNS name, got "api server"',
      ],
    ];
    for (const [answer, message] of answers) {
      answer();
      const refused = await callInit(node, initRequest());
      const failure = refused.messages.map((m) => m.kind).find((kind) => kind?.$case === 'failure');
      if (failure?.$case !== 'failure') throw new Error(`no failure message for: ${message}`);
      expect(failure.value.retrySafe).toBe(true);
      expect(failure.value.error).toContain(message);
      expect(node.fatalErrors).toEqual([]);
      expect((await node.context.tpm.pcrRead('sha256', [15])).get(15)).toEqual(Buffer.alloc(32));
    }
    cluster.metadata.update((doc) => ({ ...doc, endpoint: original as typeof doc.endpoint }));
    expect((await callInit(node, initRequest())).error).toBeUndefined();
    expect(await withTimeout(outcome, 10_000, 'outcome')).toBe('initialized');
  });
});
