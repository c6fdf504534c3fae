// Bench and test program: a share of a join storm's simulated nodes, in a process of their own so
// the JoinService's process measures only the service. Reads its orders (a JSON file named by
// the first argument), joins every node with retries, and prints one JSON line per node.
import { X509Certificate, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { SERVICE_CHANNEL_OPTIONS, requestWithAttestation, serviceChannelCredentials } from '@constellation/atls';
import { expectedMeasurements } from '@constellation/attestation';
import { createKubeletCsr } from '@constellation/keys';
import {
  JoinServiceClient,
  JoinTicket,
  JoinTicketRequest,
  createClient,
  readRetryAfter,
  retryDelay,
} from '@constellation/proto';
import { errorMessage } from '@constellation/errors';
import { BOOT, MEASURED_PCRS } from './join-service.fixture.js';
import { loadSoftwareTpms, softwareTpmIssuer } from './software-tpm.fixture.js';
import type { SoftwareTpmIdentity } from './software-tpm.fixture.js';
import { stormNodeIp } from './storm-orders.js';
import type { NodeOutcome, NodeProcessCpu, StormOrders } from './storm-orders.js';

/**
 * Each simulated node has its own connection (and TLS handshake), as separate machines do: grpc-js
 * would otherwise share one connection between channels with the same credentials.
 */
const NODE_CHANNEL_OPTIONS = { ...SERVICE_CHANNEL_OPTIONS, 'grpc.use_local_subchannel_pool': 1 };

/**
 * What a node has ready before it calls: its TPM (the EK loaded), its disk, its join request (two
 * kubelet keys and CSRs) and its gRPC client, which connects on the first call. Made before the
 * storm starts: on a real cluster each node does this on its own CPU, and here it would take the
 * service's cores (the clients alone took a tenth of a node process's first 0.7 s, measured).
 */
interface PreparedNode {
  identity: SoftwareTpmIdentity;
  issuer: ReturnType<typeof softwareTpmIssuer>;
  request: Uint8Array;
  connection: NodeConnection;
}

async function prepareNode(identity: SoftwareTpmIdentity, index: number, orders: StormOrders): Promise<PreparedNode> {
  const [clientCsr, servingCsr] = await Promise.all([
    createKubeletCsr(identity.name, []),
    createKubeletCsr(identity.name, [stormNodeIp(index)], [identity.name]),
  ]);
  const request = JoinTicketRequest.encode({
    diskUuid: randomUUID(),
    kubeletClientCertificateRequest: clientCsr.csrDer,
    kubeletServingCertificateRequest: servingCsr.csrDer,
    isControlPlane: false,
  }).finish();
  return {
    identity,
    issuer: softwareTpmIssuer(identity, expectedMeasurements(BOOT, MEASURED_PCRS), { loaded: true }),
    request,
    connection: { client: newClient(orders) },
  };
}

/** A client for the JoinService; it connects on its first call. */
function newClient(orders: StormOrders): JoinServiceClient {
  return createClient(JoinServiceClient, orders.address, serviceChannelCredentials(), NODE_CHANNEL_OPTIONS);
}

/** A node's connection: kept after a refusal for load, as the bootstrapper keeps it; else new per attempt. */
interface NodeConnection {
  client?: JoinServiceClient | undefined;
}

async function joinOnce(
  { issuer, request, connection }: PreparedNode,
  orders: StormOrders,
): Promise<{ ticket: JoinTicket; callMs: number }> {
  // Timed from here: the call (connection, attestation, ticket).
  const started = performance.now();
  const client = connection.client ?? newClient(orders);
  connection.client = undefined;
  let busy = false;
  try {
    const ticket = JoinTicket.decode(
      await requestWithAttestation(
        client.issueJoinTicket({ deadline: Date.now() + orders.requestTimeoutMs }),
        issuer,
        request,
      ),
    );
    return { ticket, callMs: performance.now() - started };
  } catch (err) {
    busy = (err as { code?: number }).code === grpc.status.RESOURCE_EXHAUSTED;
    throw err;
  } finally {
    if (busy) connection.client = client;
    else client.close();
  }
}

async function runNode(node: PreparedNode, orders: StormOrders): Promise<NodeOutcome> {
  const outcome: NodeOutcome = { name: node.identity.name, joined: false, attempts: 0, failures: {} };
  try {
    // Attempts until the give-up time; a backoff that would cross it is cut short there and one
    // last attempt made, so a node that waited through a fault still asks the recovered service.
    for (let attempt = 0; ; attempt++) {
      outcome.attempts++;
      try {
        const { ticket, callMs } = await joinOnce(node, orders);
        outcome.joined = true;
        outcome.callMs = callMs;
        outcome.joinedAfterMs = Date.now() - orders.startAtMs;
        outcome.certificateNode =
          /CN=system:node:(\S+)/.exec(new X509Certificate(ticket.kubeletClientCert).subject)?.[1] ?? '';
        return outcome;
      } catch (err) {
        const code = (err as { code?: number }).code;
        const name = code === undefined ? 'other' : (grpc.status[code] ?? String(code));
        outcome.failures[name] = (outcome.failures[name] ?? 0) + 1;
        outcome.lastError = errorMessage(err);
        if (Date.now() >= orders.giveUpAtMs) break;
        // The bootstrapper's policy: what the service asked, else backoff.
        const delay = retryDelay(attempt, readRetryAfter(err), orders.initialBackoffMs, orders.maxBackoffMs);
        await new Promise((resolve) => setTimeout(resolve, Math.min(delay, orders.giveUpAtMs - Date.now())));
      }
    }
    return outcome;
  } finally {
    node.connection.client?.close();
  }
}

async function main(): Promise<void> {
  const ordersPath = process.argv[2];
  if (ordersPath === undefined) throw new Error('usage: storm-nodes <orders.json>');
  const orders = JSON.parse(await readFile(ordersPath, 'utf8')) as StormOrders;
  const identities = (await loadSoftwareTpms(orders.identitiesPath)).slice(orders.first, orders.end);
  const nodes = await Promise.all(identities.map((identity, i) => prepareNode(identity, orders.first + i, orders)));
  // Ready, then wait for the driver's go (the storm's start time) so every process starts at once.
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  const go = await new Promise<string>((resolve) =>
    process.stdin.once('data', (chunk: Buffer) => {
      resolve(chunk.toString());
    }),
  );
  orders.startAtMs = (JSON.parse(go) as { startAtMs: number }).startAtMs;
  orders.giveUpAtMs = orders.startAtMs + orders.giveUpAfterMs;
  process.stdin.pause();
  const cpuAtGo = process.cpuUsage();
  const limit = orders.concurrency > 0 ? orders.concurrency : nodes.length;
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, nodes.length) }, async () => {
      for (let i = next++; i < nodes.length; i = next++) {
        const node = nodes[i];
        if (node === undefined) continue;
        process.stdout.write(`${JSON.stringify(await runNode(node, orders))}\n`);
      }
    }),
  );
  const { user, system } = process.cpuUsage(cpuAtGo);
  const cpu: NodeProcessCpu = { cpuMs: (user + system) / 1000 };
  process.stdout.write(`${JSON.stringify(cpu)}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`storm-nodes: ${errorMessage(err)}\n`);
    process.exit(1);
  },
);
