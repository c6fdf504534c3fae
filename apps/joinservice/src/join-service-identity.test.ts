import { X509Certificate, randomBytes, randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { expectedMeasurements } from '@constellation/attestation';
import { SoftwareAttester } from '@constellation/attestation/testing';
import { createKubeletCsr, deriveStateDiskKey } from '@constellation/keys';
import { nodeAddressBindingName, nodeNameBindingName } from '@constellation/kubeadm';
import { MemoryLogger } from '@constellation/logger/testing';
import { SERVICE_CHANNEL_OPTIONS, serviceChannelCredentials } from '@constellation/atls';
import { JoinServiceClient } from '@constellation/proto';
import { createEkCa } from '@constellation/swtpm';
import { createTempDir } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOT, MEASURED_PCRS, SimulatedNode, rpcFailure, startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture } from './join-service.fixture.js';
import { CLUSTER_START_TIMEOUT_MS, CLUSTER_STOP_TIMEOUT_MS } from './join-service-cluster.fixture.js';
import { startJoinService } from './join-service.js';

// Attackers 1 and 2 of the threat model against the JoinService, over real gRPC, with swtpm TPMs
// manufactured with EK certificates and an instance registry that knows each machine.
let fixture: JoinFixture;
let worker: SimulatedNode;
let other: SimulatedNode;
let attacker: SimulatedNode | undefined;
const nodes: SimulatedNode[] = [];

/** Bootstrap-token Secrets in kube-system, read from the real API server. */
const tokenCountIn = async (f: JoinFixture): Promise<number> => (await f.cluster.bootstrapTokenSecrets()).length;
const tokenCount = (): Promise<number> => tokenCountIn(fixture);
/** The two kubelet certificate requests of a node asking as `name` with serving addresses `ips`. */
const asking = async (name: string, ips: string[]): Promise<{ clientCsrDer: Buffer; servingCsrDer: Buffer }> => ({
  clientCsrDer: (await createKubeletCsr(name, [])).csrDer,
  servingCsrDer: (await createKubeletCsr(name, ips, [name])).csrDer,
});
const configMapsIn = (f: JoinFixture): Promise<string[]> => f.cluster.configMapNames();

beforeAll(async () => {
  fixture = await startJoinFixture(new MemoryLogger());
  [worker, other] = await Promise.all([fixture.node('worker-1', '10.42.0.11'), fixture.node('worker-2', '10.42.0.12')]);
  nodes.push(worker, other);
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
  await fixture.close();
}, CLUSTER_STOP_TIMEOUT_MS);

describe('attacker without a TPM', () => {
  it('a software attester with the right PCR values gets nothing: the unrooted variant is not accepted', async () => {
    const before = await tokenCount();
    const attacker = Object.assign(Object.create(worker) as SimulatedNode, {
      issuer: new SoftwareAttester({ claims: expectedMeasurements(BOOT, MEASURED_PCRS) }),
    });
    const failure = await rpcFailure(attacker.requestJoin(fixture.client));
    expect(failure).toMatchObject({
      code: grpc.status.PERMISSION_DENIED,
      details: 'attestation variant "qemu-vtpm" is not accepted; this service accepts: tpm2-ek',
    });
    expect(await tokenCount()).toBe(before);
  });

  it("a software attester posing with a genuine node's EK certificate fails credential activation", async () => {
    const before = await tokenCount();
    const attacker = Object.assign(Object.create(worker) as SimulatedNode, {
      issuer: new SoftwareAttester({
        claims: expectedMeasurements(BOOT, MEASURED_PCRS),
        stolenIdentity: worker.issuer.rooted?.identity,
      }),
    });
    const failure = await rpcFailure(attacker.requestJoin(fixture.client));
    expect(failure).toMatchObject({
      code: grpc.status.PERMISSION_DENIED,
      details:
        'attestation rejected: credential activation failed: the attestation key does not live in the TPM that holds the certified endorsement key',
    });
    expect(await tokenCount()).toBe(before);
  });
});

describe('machines the cluster does not know', () => {
  it('refuses a TPM whose EK certificate comes from another CA', async () => {
    const otherCa = await createEkCa(join(fixture.dir.path, 'other-vendor'), { name: 'Other vendor' });
    const stranger = await SimulatedNode.boot('worker-9', '10.42.0.19', otherCa);
    nodes.push(stranger);
    const failure = await rpcFailure(stranger.requestJoin(fixture.client));
    expect(failure.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(failure.details).toMatch(/^attestation rejected: .*does not chain to a pinned root/);
  });

  it('refuses a genuine, certified TPM that the instance registry does not know', async () => {
    const unregistered = await fixture.node('worker-8', '10.42.0.18', { registered: false });
    nodes.push(unregistered);
    const before = await tokenCount();
    const failure = await rpcFailure(unregistered.requestJoin(fixture.client));
    expect(failure).toMatchObject({
      code: grpc.status.PERMISSION_DENIED,
      details: `endorsement key sha256:${unregistered.ekPublicKeyHash} is not registered: the platform knows no machine with this TPM`,
    });
    expect(await tokenCount()).toBe(before);
  });

  it('refuses the AK of one TPM presented with the EK certificate of another', async () => {
    const rooted = worker.issuer.rooted;
    const otherRooted = other.issuer.rooted;
    if (rooted === undefined || otherRooted === undefined) throw new Error('nodes must be rooted');
    // worker-1's owner claims worker-2's identity (public), but signs with worker-1's TPM.
    const mixed = Object.create(worker.issuer) as typeof worker.issuer;
    let tpmRefused: unknown;
    Object.defineProperty(mixed, 'rooted', {
      value: {
        ...rooted,
        identity: otherRooted.identity,
        // worker-1's TPM cannot open a credential made for worker-2's EK; answer with a guess.
        activate: (credential: Parameters<typeof rooted.activate>[0]) =>
          rooted.activate(credential).catch((err: unknown) => {
            tpmRefused = err;
            return randomBytes(32);
          }),
      },
    });
    const attacker = Object.assign(Object.create(worker) as SimulatedNode, { issuer: mixed });
    const failure = await rpcFailure(attacker.requestJoin(fixture.client));
    expect(String(tpmRefused)).toMatch(/ActivateCredential/);
    expect(failure).toMatchObject({
      code: grpc.status.PERMISSION_DENIED,
      details:
        'attestation rejected: credential activation failed: the attestation key does not live in the TPM that holds the certified endorsement key',
    });
  });
});

describe('a genuine, attested worker asking for more than it is (attacker 2)', () => {
  it('gets a client certificate naming exactly its registered node, and a serving one for exactly its registered IP', async () => {
    const { ticket } = await worker.requestJoin(fixture.client);
    const client = new X509Certificate(ticket.kubeletClientCert);
    expect(client.subject).toBe('O=system:nodes\nCN=system:node:worker-1');
    expect(client.subjectAltName).toBeUndefined();
    const serving = new X509Certificate(ticket.kubeletServingCert);
    expect(serving.subject).toBe('O=system:nodes\nCN=system:node:worker-1');
    expect(serving.subjectAltName).toBe('DNS:worker-1, IP Address:10.42.0.11');
  });

  it('is refused the control-plane role, and nothing is handed out', async () => {
    const before = await tokenCount();
    const failure = await rpcFailure(worker.requestJoin(fixture.client, { controlPlane: true }));
    expect(failure).toMatchObject({
      code: grpc.status.PERMISSION_DENIED,
      details: 'machine "worker-1" is registered as a worker but asked to join as a control-plane node',
    });
    expect(await tokenCount()).toBe(before);
    // No control-plane join Lease was taken (kube-system's other Leases are the control plane's own).
    const leases = await fixture.cluster.coordination.listNamespacedLease({ namespace: 'kube-system' });
    expect(leases.items.map((l) => l.metadata?.name)).not.toContain('constellation-control-plane-join');
  });

  // What a kubelet CSR may ask for: ValidateKubeletClientCSR / ValidateKubeletServingCSR in
  // pkg/apis/certificates/helpers.go, narrowed to the machine's registry entry. The attacker is
  // its own registered worker (worker-3), so its ticket budget (5 in a row) is its own.
  it.each([
    [
      'client',
      ['worker-2', [], []],
      'kubelet client certificate request refused: certificate request names node "worker-2", but this machine is registered as "worker-3"',
    ],
    [
      'client',
      ['worker-3', ['10.42.0.13'], []],
      'kubelet client certificate request refused: subjectAltNames are not allowed in a kubelet client certificate (ValidateKubeletClientCSR); the request asks for ip:10.42.0.13',
    ],
    [
      'serving',
      ['worker-2', ['10.42.0.12'], ['worker-2']],
      'kubelet serving certificate request refused: certificate request names node "worker-2", but this machine is registered as "worker-3"',
    ],
    [
      'serving',
      ['worker-3', ['10.42.0.13', '10.96.0.1', '10.42.0.12'], ['worker-3']],
      'kubelet serving certificate request refused: certificate request asks for IP addresses that are not registered for "worker-3": 10.96.0.1, 10.42.0.12',
    ],
    [
      'serving',
      ['worker-3', ['10.42.0.13'], ['worker-3', 'kubernetes.default.svc']],
      'kubelet serving certificate request refused: certificate request asks for DNS names other than the node name "worker-3": kubernetes.default.svc',
    ],
  ] as ['client' | 'serving', [string, string[], string[]], string][])(
    "is refused a %s certificate for another node's name or addresses, before any token exists: %j",
    async (which, [name, ips, dnsNames], details) => {
      attacker ??= await fixture.node('worker-3', '10.42.0.13');
      if (!nodes.includes(attacker)) nodes.push(attacker);
      const before = await tokenCount();
      const csrDer = (await createKubeletCsr(name, ips, dnsNames)).csrDer;
      const options = which === 'client' ? { clientCsrDer: csrDer } : { servingCsrDer: csrDer };
      expect(await rpcFailure(attacker.requestJoin(fixture.client, options))).toMatchObject({
        code: grpc.status.INVALID_ARGUMENT,
        details,
      });
      expect(await tokenCount()).toBe(before);
    },
  );

  it("cannot get another node's disk key, nor lock its owner out by claiming its UUID first", async () => {
    const key = (node: SimulatedNode, uuid: string): Buffer =>
      deriveStateDiskKey(fixture.masterSecret.key, fixture.masterSecret.salt, uuid, node.ekPublicKeyHash);
    const ownDisk = worker.diskUuid;
    const ownReceipt = worker.diskReceipt;
    // The red team's attack: the worker joins with the UUID of a node that has not joined yet.
    worker.diskUuid = other.diskUuid;
    try {
      const { ticket: squat } = await worker.requestJoin(fixture.client);
      // Disk keys are derived for (UUID, EK): the worker gets a key for nothing of the other node's.
      expect(squat.stateDiskKey).toEqual(key(worker, other.diskUuid));
      expect(squat.stateDiskKey).not.toEqual(key(other, other.diskUuid));
      // A rejoin for a disk this machine never joined with is refused, with no receipt or with the
      // receipt of a disk it did join with.
      const madeUp = randomUUID();
      for (const diskReceipt of [Buffer.alloc(0), ownReceipt]) {
        expect(await rpcFailure(worker.requestRejoin(fixture.client, { diskUuid: madeUp, diskReceipt }))).toMatchObject(
          {
            code: grpc.status.PERMISSION_DENIED,
            details:
              diskReceipt.length === 0
                ? `this machine showed no disk receipt for state disk ${madeUp} and no record says it joined with it; a rejoin ticket is only given for a disk the machine joined with`
                : `the disk receipt shown is not this machine's for state disk ${madeUp}; a rejoin ticket is only given for a disk the machine joined with (its join ticket's receipt, kept in the disk's LUKS2 header)`,
          },
        );
      }
    } finally {
      worker.diskUuid = ownDisk;
      worker.diskReceipt = ownReceipt;
    }
    // The real owner joins and rejoins with its own key, claim or no claim.
    expect((await other.requestJoin(fixture.client)).ticket.stateDiskKey).toEqual(key(other, other.diskUuid));
    expect((await other.requestRejoin(fixture.client)).stateDiskKey).toEqual(key(other, other.diskUuid));
    expect((await worker.requestRejoin(fixture.client)).stateDiskKey).toEqual(key(worker, worker.diskUuid));
    // The other machine's receipt for its own disk is of no use to the worker: it names that machine.
    const borrowed = await rpcFailure(
      worker.requestRejoin(fixture.client, { diskUuid: other.diskUuid, diskReceipt: other.diskReceipt }),
    );
    expect(borrowed.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(borrowed.details).toMatch(/^the disk receipt shown is not this machine's for state disk /);
  });
});

describe('bare metal: no instance registry, the explicit switch', () => {
  it(
    'admits any node whose EK chains to the roots, with the name and IPs it asks for, disk keys still per machine',
    async () => {
      const bare = await startJoinFixture(new MemoryLogger(), {}, { registry: false });
      const node = await bare.node('metal-7', '10.42.0.77', { registered: false });
      const stranger = await SimulatedNode.boot(
        'metal-8',
        '10.42.0.78',
        await createEkCa(join(bare.dir.path, 'other-vendor'), { name: 'Other vendor' }),
      );
      try {
        const { ticket } = await node.requestJoin(bare.client);
        expect(new X509Certificate(ticket.kubeletClientCert).subject).toBe('O=system:nodes\nCN=system:node:metal-7');
        expect(new X509Certificate(ticket.kubeletServingCert).subjectAltName).toBe(
          'DNS:metal-7, IP Address:10.42.0.77',
        );
        // Both requests must still name one node.
        const mixed = (await createKubeletCsr('metal-8', [])).csrDer;
        expect(await rpcFailure(node.requestJoin(bare.client, { clientCsrDer: mixed }))).toMatchObject({
          code: grpc.status.INVALID_ARGUMENT,
          details: 'kubelet certificate requests name two nodes: client "metal-8", serving "metal-7"',
        });
        // The roots still decide who is a machine at all.
        const failure = await rpcFailure(stranger.requestJoin(bare.client));
        expect(failure.details).toMatch(/does not chain to a pinned root/);
        // And disk keys stay bound to the machine: another one naming the same UUID gets another key.
        const other = await bare.node('metal-9', '10.42.0.79', { registered: false });
        other.diskUuid = node.diskUuid;
        nodes.push(other);
        expect((await other.requestJoin(bare.client)).ticket.stateDiskKey).not.toEqual(ticket.stateDiskKey);
      } finally {
        await node.stop();
        await stranger.stop();
        await bare.close();
      }
    },
    CLUSTER_START_TIMEOUT_MS + CLUSTER_STOP_TIMEOUT_MS,
  );
});

describe('bare metal: who may join as a control plane (attacker 2 asking for the CA keys)', () => {
  it(
    'admits a control-plane join only for a machine listed in --control-plane-eks, and none without the list',
    async () => {
      const bare = await startJoinFixture(new MemoryLogger(), {}, { registry: false });
      const [worker, listed] = await Promise.all([
        bare.node('metal-10', '10.42.0.80', { registered: false }),
        bare.node('metal-11', '10.42.0.81', { registered: false }),
      ]);
      const lists = await createTempDir('constellation-control-plane-eks-');
      const listPath = join(lists.path, 'control-plane-eks');
      await writeFile(listPath, `# bare-metal control planes\n\nsha256:${listed.ekPublicKeyHash}  # rack 3\n`);
      const service = await startJoinService(
        { ...bare.settings, port: 0, controlPlaneEksPath: listPath },
        new MemoryLogger(),
      );
      const client = new JoinServiceClient(
        `127.0.0.1:${service.port}`,
        serviceChannelCredentials(),
        SERVICE_CHANNEL_OPTIONS,
      );
      const refusal = (node: SimulatedNode, listedCount: number): object => ({
        code: grpc.status.PERMISSION_DENIED,
        details: `machine sha256:${node.ekPublicKeyHash} asked to join as a control-plane node, which receives the cluster CA keys; without an instance registry only machines listed in --control-plane-eks may (${listedCount === 0 ? 'no list given' : `${listedCount} listed`})`,
      });
      try {
        // A genuine worker asks for the control-plane role: without a list, no machine gets it.
        expect(await rpcFailure(worker.requestJoin(bare.client, { controlPlane: true }))).toMatchObject(
          refusal(worker, 0),
        );
        expect(await rpcFailure(listed.requestJoin(bare.client, { controlPlane: true }))).toMatchObject(
          refusal(listed, 0),
        );
        // With the list, the unlisted machine is still refused; the listed one gets the CA keys.
        expect(await rpcFailure(worker.requestJoin(client, { controlPlane: true }))).toMatchObject(refusal(worker, 1));
        const { ticket } = await listed.requestJoin(client, { controlPlane: true });
        expect(ticket.controlPlaneFiles.map((f) => f.name)).toContain('ca.key');
        // The unlisted machine joins as what it is.
        expect((await worker.requestJoin(client)).ticket.controlPlaneFiles).toEqual([]);
      } finally {
        client.close();
        await service.close();
        await lists.remove();
        await Promise.all([worker.stop(), listed.stop()]);
        await bare.close();
      }
    },
    CLUSTER_START_TIMEOUT_MS + CLUSTER_STOP_TIMEOUT_MS,
  );
});

describe("bare metal: node names (attacker 2 taking another node's name)", () => {
  it(
    'gives a name to the first machine that joins with it, and each machine keeps its one name',
    async () => {
      const bare = await startJoinFixture(new MemoryLogger(), {}, { registry: false });
      const [first, second] = await Promise.all([
        bare.node('metal-20', '10.42.0.90', { registered: false }),
        bare.node('metal-22', '10.42.0.92', { registered: false }),
      ]);
      const record = (name: string): string => `kube-system/${nodeNameBindingName(name)}`;
      try {
        await first.requestJoin(bare.client);
        // Another genuine machine asks for the first one's name: a kubelet certificate for it would
        // act as that Node.
        const before = await tokenCountIn(bare);
        expect(
          await rpcFailure(second.requestJoin(bare.client, await asking('metal-20', ['10.42.0.92']))),
        ).toMatchObject({
          code: grpc.status.PERMISSION_DENIED,
          details: `node name "metal-20" belongs to another machine (EK sha256:${first.ekPublicKeyHash}); to give it to this one, delete ConfigMap ${record('metal-20')}`,
        });
        expect(await tokenCountIn(bare)).toBe(before);
        // The first machine cannot collect more names either (names it never joined with stay free).
        expect(
          await rpcFailure(first.requestJoin(bare.client, await asking('metal-21', ['10.42.0.90']))),
        ).toMatchObject({
          code: grpc.status.PERMISSION_DENIED,
          details: expect.stringContaining(
            'this machine joined the cluster as "metal-20" and asked to join as "metal-21"; a machine keeps its node name',
          ) as unknown,
        });
        expect(await configMapsIn(bare)).not.toContain(nodeNameBindingName('metal-21')); // refused asks claim nothing
        // The second machine, refused its first ask, still joins under its own name; the first rejoins as itself.
        expect(new X509Certificate((await second.requestJoin(bare.client)).ticket.kubeletClientCert).subject).toBe(
          'O=system:nodes\nCN=system:node:metal-22',
        );
        await first.requestJoin(bare.client);
      } finally {
        await Promise.all([first.stop(), second.stop()]);
        await bare.close();
      }
    },
    CLUSTER_START_TIMEOUT_MS + CLUSTER_STOP_TIMEOUT_MS,
  );
});

describe('a genuine node joining again and again with made-up disks (attacker 2)', () => {
  it('leaves no record behind in the API: each ticket carries a receipt for its own disk instead', async () => {
    // Found by a red-team pass: every join with a new disk UUID recorded one more ConfigMap, and
    // nothing removed them (about 1,440 a day per replica at one ticket a minute).
    const flapping = await fixture.node('worker-flapping', '10.42.0.32');
    nodes.push(flapping);
    const before = (await configMapsIn(fixture)).length;
    const receipts = new Map<string, Buffer>();
    for (let i = 0; i < 4; i++) {
      flapping.diskUuid = randomUUID();
      await flapping.requestJoin(fixture.client);
      receipts.set(flapping.diskUuid, flapping.diskReceipt);
    }
    expect((await configMapsIn(fixture)).length).toBe(before);
    // Each disk's receipt still gets that disk's key on a rejoin, and only that disk's.
    for (const [diskUuid, diskReceipt] of receipts) {
      expect((await flapping.requestRejoin(fixture.client, { diskUuid, diskReceipt })).stateDiskKey).toEqual(
        deriveStateDiskKey(fixture.masterSecret.key, fixture.masterSecret.salt, diskUuid, flapping.ekPublicKeyHash),
      );
    }
  });
});

describe('a genuine node asking for tickets over and over (attacker 2)', () => {
  it('writes nothing to the cluster for any of its tickets, then is told when to come back', async () => {
    const greedy = await fixture.node('worker-greedy', '10.42.0.31');
    nodes.push(greedy);
    const before = await tokenCount();
    const tickets: string[] = [];
    let refusal: Awaited<ReturnType<typeof rpcFailure>> | undefined;
    // Found on main once: 200 requests left 200 live token Secrets. Then one token, and a budget;
    // now no token at all (the node joins with its own kubelet certificate), and the budget.
    for (let i = 0; i < 8 && refusal === undefined; i++) {
      try {
        tickets.push(new X509Certificate((await greedy.requestJoin(fixture.client)).ticket.kubeletClientCert).subject);
      } catch (err) {
        refusal = {
          code: (err as grpc.ServiceError).code,
          details: (err as grpc.ServiceError).details,
          metadata: (err as grpc.ServiceError).metadata,
        };
      }
    }
    // Five tickets (the budget's burst), each in its own name only; no Secret written for any.
    expect(tickets, `tickets handed out before the refusal (${String(refusal?.details)})`).toEqual(
      Array.from({ length: 5 }, () => 'O=system:nodes\nCN=system:node:worker-greedy'),
    );
    expect(await tokenCount()).toBe(before);
    expect(refusal?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(refusal?.details).toMatch(/^machine worker-greedy asked for more than 5 tickets in a row; retry in \d+ s$/);
    expect(Number(refusal?.metadata?.get('retry-after-ms')[0])).toBeGreaterThan(0);
    const metrics = await (await fetch(`http://127.0.0.1:${fixture.service.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/constellation_joinservice_ticket_refusals_total\{kind="join",reason="rate-limited"\} 1/);
  });
});

describe("bare metal: node addresses (attacker 2 taking another node's address)", () => {
  it(
    'gives an address to the first machine that joins with it, in every spelling of it; a machine may add addresses',
    async () => {
      const bare = await startJoinFixture(new MemoryLogger(), {}, { registry: false });
      const [first, second] = await Promise.all([
        bare.node('metal-30', '10.42.0.100', { registered: false }),
        bare.node('metal-31', '10.42.0.101', { registered: false }),
      ]);
      try {
        await first.requestJoin(bare.client);
        const before = await tokenCountIn(bare);
        // A serving certificate for the first node's address lets whoever can take that address on
        // the network (ARP, a stale DHCP lease) answer the API server in its place. Go's verifier
        // takes an IPv4-mapped IPv6 SAN for the IPv4 address, so that spelling is the same address.
        for (const ip of ['10.42.0.100', '::ffff:10.42.0.100']) {
          expect(
            await rpcFailure(second.requestJoin(bare.client, await asking('metal-31', ['10.42.0.101', ip]))),
            ip,
          ).toMatchObject({
            code: grpc.status.PERMISSION_DENIED,
            details: `address 10.42.0.100 belongs to another machine (EK sha256:${first.ekPublicKeyHash}, node "metal-30"); to give it to this one, delete ConfigMap kube-system/${nodeAddressBindingName('10.42.0.100')}`,
          });
        }
        expect(await tokenCountIn(bare)).toBe(before);
        // The refused asks claimed nothing: neither the name nor the address that was free.
        expect(await configMapsIn(bare)).not.toContain(nodeAddressBindingName('10.42.0.101'));
        expect(await configMapsIn(bare)).not.toContain(nodeNameBindingName('metal-31'));
        // The second machine joins with its own address; the first keeps its own and may add one.
        await second.requestJoin(bare.client);
        await first.requestJoin(bare.client, await asking('metal-30', ['10.42.0.100', '10.42.0.102']));
        expect(await configMapsIn(bare)).toContain(nodeAddressBindingName('10.42.0.102'));
        // Reserving addresses locks every later machine out of them: a whole subnet in one ask is
        // refused before anything is recorded, and a machine holds at most 8 addresses.
        const subnet = Array.from({ length: 254 }, (_, i) => `10.42.7.${String(i + 1)}`);
        expect(await rpcFailure(second.requestJoin(bare.client, await asking('metal-31', subnet)))).toMatchObject({
          code: grpc.status.PERMISSION_DENIED,
          details: 'the kubelet serving certificate request names 254 addresses; a machine holds at most 8',
        });
        expect(await configMapsIn(bare)).not.toContain(nodeAddressBindingName('10.42.7.1'));
      } finally {
        await Promise.all([first.stop(), second.stop()]);
        await bare.close();
      }
    },
    CLUSTER_START_TIMEOUT_MS + CLUSTER_STOP_TIMEOUT_MS,
  );
});
