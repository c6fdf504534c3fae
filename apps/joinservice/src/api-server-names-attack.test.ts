import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { apiServerAltNames } from '@constellation/kubeadm';
import { createKubeletCsr } from '@constellation/keys';
import { MemoryLogger } from '@constellation/logger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLUSTER_START_TIMEOUT_MS } from './join-service-cluster.fixture.js';
import { CLUSTER, startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';

/*
 * Attacker 2: the owner of one genuine, attested worker asks for a kubelet serving certificate
 * that names the API server. The cluster CA signs both, so every kubelet, every joining node's
 * kubeadm and every pod (in-cluster clients dial the `kubernetes` Service's ClusterIP) would
 * accept the worker's certificate in the API server's place, wherever the worker can take the
 * traffic (ARP on a flat network, a stale lease, its own node's Service routing). Found by a
 * red-team pass: on bare metal every unclaimed address and any valid node name were granted.
 */

/** Bootstrap-token Secrets in kube-system, read from the real API server. */
const tokenCount = async (fixture: JoinFixture): Promise<number> =>
  (await fixture.cluster.bootstrapTokenSecrets()).length;

/** What the ask got: the refusal, or the serving certificate's SANs when one was issued. */
async function outcome(
  promise: ReturnType<SimulatedNode['requestJoin']>,
): Promise<{ issuedSans?: string | undefined; code?: grpc.status; details?: string }> {
  try {
    const { ticket } = await promise;
    return { issuedSans: new X509Certificate(ticket.kubeletServingCert).subjectAltName };
  } catch (err) {
    return { code: (err as grpc.ServiceError).code, details: (err as grpc.ServiceError).details };
  }
}

/** Asks as `node` for certificates naming `name` with `ips`. */
async function ask(
  fixture: JoinFixture,
  node: SimulatedNode,
  name: string,
  ips: readonly string[],
): ReturnType<typeof outcome> {
  return outcome(
    node.requestJoin(fixture.client, {
      clientCsrDer: (await createKubeletCsr(name, [])).csrDer,
      servingCsrDer: (await createKubeletCsr(name, ips, [name])).csrDer,
    }),
  );
}

const nameRefusal = (name: string): string =>
  `node name "${name}" is a name of the API server (its certificate carries it, and a kubelet serving certificate carries its node name); a worker may not take it`;
const addressRefusal = (address: string): string =>
  `address ${address} is the API server's (its certificate names it: the control-plane endpoint, the kubernetes service address, an advertise address or a certSAN); a worker's kubelet serving certificate may not name it`;

describe('bare metal, a cluster configuration without the published names (attacker 2)', () => {
  let bare: JoinFixture;
  const nodes: SimulatedNode[] = [];
  /** A fresh machine per ask: a machine keeps the first name it joined with. */
  const machine = async (n: number): Promise<SimulatedNode> => {
    const node = await bare.node(`metal-${String(n)}`, `10.42.0.${String(n)}`, { registered: false });
    nodes.push(node);
    return node;
  };

  beforeAll(async () => {
    // CLUSTER publishes no names, as in a cluster initialised before init published them: the
    // control-plane endpoint (the service's own setting) and the Service's names still count.
    bare = await startJoinFixture(new MemoryLogger(), {}, { registry: false, cluster: CLUSTER });
  }, CLUSTER_START_TIMEOUT_MS);

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    await bare.close();
  });

  it("refuses an IP SAN for the control-plane endpoint's address (a load balancer's, no node's)", async () => {
    // The real API server's address: the endpoint the service hands to nodes.
    const [endpointIp = ''] = bare.settings.apiServerEndpoint.split(':');
    expect(bare.settings.apiServerEndpoint).toBe(`${bare.cluster.controlPlane.namespace.ip}:6443`);
    const before = await tokenCount(bare);
    const got = await ask(bare, await machine(140), 'metal-140', ['10.42.0.140', endpointIp]);
    expect(got, `issued a serving certificate with ${String(got.issuedSans)}`).toEqual({
      code: grpc.status.PERMISSION_DENIED,
      details: addressRefusal(endpointIp),
    });
    // Also as an IPv4-mapped IPv6 address, which Go's verifier takes for the IPv4 one.
    const mapped = await ask(bare, await machine(141), 'metal-141', [`::ffff:${endpointIp}`]);
    expect(mapped.details).toBe(addressRefusal(endpointIp));
    expect(await tokenCount(bare)).toBe(before);
  });

  it.each([
    'kubernetes',
    'kubernetes.default.svc',
    'kubernetes.default.svc.cluster.local',
    'kubernetes.default.svc.corp',
  ])('refuses the node name %s (a serving certificate carries its node name as a DNS SAN)', async (name) => {
    const before = await tokenCount(bare);
    const got = await ask(bare, await machine(150 + name.length), name, [`10.42.0.${String(150 + name.length)}`]);
    expect(got, `issued a serving certificate with ${String(got.issuedSans)}`).toEqual({
      code: grpc.status.PERMISSION_DENIED,
      details: nameRefusal(name),
    });
    expect(await tokenCount(bare)).toBe(before);
  });

  it('still gives a worker with its own name and address its ticket', async () => {
    const got = await ask(bare, await machine(170), 'metal-170', ['10.42.0.170']);
    expect(got.issuedSans).toBe('DNS:metal-170, IP Address:10.42.0.170');
  });
});

describe('the names init published (registered machines)', () => {
  let fixture: JoinFixture;
  const nodes: SimulatedNode[] = [];
  const certSans = ['api.constellation.test', '10.42.0.3'];
  /** What init publishes for the real control plane at `ip`, with the certSANs it was started with. */
  const published = (ip: string): ReturnType<typeof apiServerAltNames> =>
    apiServerAltNames({ nodeName: 'control-plane-0', nodeIp: ip, controlPlaneEndpoint: `${ip}:6443`, certSans });

  beforeAll(async () => {
    fixture = await startJoinFixture(
      new MemoryLogger(),
      {},
      { cluster: (ip) => ({ ...CLUSTER, apiServer: published(ip) }), certSans },
    );
  }, CLUSTER_START_TIMEOUT_MS);

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    await fixture.close();
  });

  const registered = async (
    name: string,
    ip: string,
    role: 'worker' | 'control-plane' = 'worker',
  ): Promise<SimulatedNode> => {
    const node = await fixture.node(name, ip, { role });
    nodes.push(node);
    return node;
  };

  it("refuses a worker whose address is the kubernetes Service's ClusterIP or a certSAN, even where the registry lists it", async () => {
    // The published names are the real API server's: its certificate carries each address.
    const apiServerCertificate = new X509Certificate(await readFile(join(fixture.cluster.pkiDir, 'apiserver.crt')));
    const names = published(fixture.cluster.controlPlane.namespace.ip);
    for (const ip of names.ips) expect(apiServerCertificate.subjectAltName).toContain(`IP Address:${ip}`);
    expect(names.ips).toContain('10.96.0.1');
    for (const ip of ['10.96.0.1', '10.42.0.3']) {
      const worker = await registered(`worker-${ip.replaceAll('.', '-')}`, ip);
      const got = await outcome(worker.requestJoin(fixture.client));
      expect(got, `issued a serving certificate with ${String(got.issuedSans)}`).toEqual({
        code: grpc.status.PERMISSION_DENIED,
        details: addressRefusal(ip),
      });
    }
  });

  it('refuses a worker named like a certSAN DNS name', async () => {
    const worker = await registered('api.constellation.test', '10.42.0.60');
    const got = await outcome(worker.requestJoin(fixture.client));
    expect(got).toEqual({ code: grpc.status.PERMISSION_DENIED, details: nameRefusal('api.constellation.test') });
  });

  it("lets a control plane (which receives the CA's key) join at an address the API server's certificate names", async () => {
    const controlPlane = await registered('control-plane-1', '10.42.0.3', 'control-plane');
    const got = await outcome(controlPlane.requestJoin(fixture.client, { controlPlane: true }));
    expect(got.issuedSans).toBe('DNS:control-plane-1, IP Address:10.42.0.3');
  });
});
