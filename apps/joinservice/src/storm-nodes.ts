// Bench and test program: a share of a join storm's simulated nodes, in a process of their own so
// the JoinService's process measures only the service. Reads its orders (a JSON file named by
// the first argument), joins every node with retries, and prints one JSON line per node.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { SERVICE_CHANNEL_OPTIONS, requestWithAttestation, serviceChannelCredentials } from '@constellation/atls';
import { expectedMeasurements } from '@constellation/attestation';
import { createKubeletCsr } from '@constellation/keys';
import { JoinServiceClient, JoinTicket, JoinTicketRequest, createClient } from '@constellation/proto';
import { errorMessage } from '@constellation/errors';
import { BOOT, MEASURED_PCRS } from './join-service.fixture.js';
import { loadSoftwareTpms, softwareTpmIssuer } from './software-tpm.fixture.js';
import type { SoftwareTpmIdentity } from './software-tpm.fixture.js';
import { stormNodeIp } from './storm-orders.js';
import type { NodeOutcome, StormOrders } from './storm-orders.js';

/** The retry-after-ms trailer of a failed call, as the node's join client reads it. */
function retryAfter(err: unknown): number | undefined {
  const metadata = (err as { metadata?: unknown }).metadata;
  if (!(metadata instanceof grpc.Metadata)) return undefined;
  const [value] = metadata.get('retry-after-ms');
  const ms = Number(typeof value === 'string' ? value : value?.toString());
  return Number.isFinite(ms) && ms >= 0 ? Math.min(ms, 5 * 60_000) : undefined;
}

/** The bootstrapper's policy (join-service-client.ts nextAttemptDelay), for a process outside its package. */
function nextDelay(attempt: number, err: unknown, initialMs: number, maxMs: number): number {
  const backoff = Math.floor(Math.random() * Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30)));
  const asked = retryAfter(err);
  if (asked === undefined) return backoff;
  return Math.max(backoff, asked + Math.floor(Math.random() * Math.min(asked / 10, 1_000)));
}

async function joinOnce(
  identity: SoftwareTpmIdentity,
  issuer: ReturnType<typeof softwareTpmIssuer>,
  diskUuid: string,
  ip: string,
  orders: StormOrders,
): Promise<{ ticket: JoinTicket; callMs: number }> {
  const [clientCsr, servingCsr] = await Promise.all([
    createKubeletCsr(identity.name, []),
    createKubeletCsr(identity.name, [ip], [identity.name]),
  ]);
  const request = JoinTicketRequest.encode({
    diskUuid,
    kubeletClientCertificateRequest: clientCsr.csrDer,
    kubeletServingCertificateRequest: servingCsr.csrDer,
    isControlPlane: false,
  }).finish();
  // Timed from here: the call (connection, attestation, ticket), not the node's own key generation.
  const started = performance.now();
  const client = createClient(JoinServiceClient, orders.address, serviceChannelCredentials(), SERVICE_CHANNEL_OPTIONS);
  try {
    const ticket = JoinTicket.decode(
      await requestWithAttestation(
        client.issueJoinTicket({ deadline: Date.now() + orders.requestTimeoutMs }),
        issuer,
        request,
      ),
    );
    return { ticket, callMs: performance.now() - started };
  } finally {
    client.close();
  }
}

async function runNode(identity: SoftwareTpmIdentity, index: number, orders: StormOrders): Promise<NodeOutcome> {
  const issuer = softwareTpmIssuer(identity, expectedMeasurements(BOOT, MEASURED_PCRS));
  const diskUuid = randomUUID();
  const outcome: NodeOutcome = { name: identity.name, joined: false, attempts: 0, failures: {} };
  for (let attempt = 0; Date.now() < orders.giveUpAtMs; attempt++) {
    outcome.attempts++;
    try {
      const { ticket, callMs } = await joinOnce(identity, issuer, diskUuid, stormNodeIp(index), orders);
      outcome.joined = true;
      outcome.callMs = callMs;
      outcome.joinedAfterMs = Date.now() - orders.startAtMs;
      outcome.tokenId = ticket.token.split('.')[0] ?? '';
      outcome.tokenExpiresMs = Number(ticket.tokenExpiresUnixSeconds) * 1000;
      return outcome;
    } catch (err) {
      const code = (err as { code?: number }).code;
      const name = code === undefined ? 'other' : (grpc.status[code] ?? String(code));
      outcome.failures[name] = (outcome.failures[name] ?? 0) + 1;
      outcome.lastError = errorMessage(err);
      const delay = nextDelay(attempt, err, orders.initialBackoffMs, orders.maxBackoffMs);
      await new Promise((resolve) => setTimeout(resolve, Math.min(delay, Math.max(0, orders.giveUpAtMs - Date.now()))));
    }
  }
  return outcome;
}

async function main(): Promise<void> {
  const ordersPath = process.argv[2];
  if (ordersPath === undefined) throw new Error('usage: storm-nodes <orders.json>');
  const orders = JSON.parse(await readFile(ordersPath, 'utf8')) as StormOrders;
  const identities = (await loadSoftwareTpms(orders.identitiesPath)).slice(orders.first, orders.end);
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
  const limit = orders.concurrency > 0 ? orders.concurrency : identities.length;
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, identities.length) }, async () => {
      for (let i = next++; i < identities.length; i = next++) {
        const identity = identities[i];
        if (identity === undefined) continue;
        process.stdout.write(`${JSON.stringify(await runNode(identity, orders.first + i, orders))}\n`);
      }
    }),
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`storm-nodes: ${errorMessage(err)}\n`);
    process.exit(1);
  },
);
