// `npm run bench`: a genuine node's join while strangers without a TPM replay genuine nodes'
// public hellos from several addresses and never answer (issue 50, item 5), next to the same join
// with nobody else calling, in one run. The service has the production number of slots (16); each
// stranger address keeps as many silent calls open as the service lets it, and opens another the
// moment one ends. Each genuine node makes one call after another as the bootstrapper does,
// waiting what retry-after-ms says between refusals, until it has its ticket. Real swtpm TPMs, a
// real control plane. Prints figures; asserts nothing.
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { SERVICE_CHANNEL_OPTIONS, serviceChannelCredentials } from '@constellation/atls';
import { MemoryLogger } from '@constellation/logger/testing';
import { JoinServiceClient } from '@constellation/proto';
import { startSourceRelay } from '@constellation/testing';
import type { SourceRelay } from '@constellation/testing';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';
import { silentCall } from './silent-call.fixture.js';

const SLOTS = 16;
const ADDRESSES = Number(process.env['BENCH_STRANGER_ADDRESSES'] ?? 2);
/**
 * Distinct genuine hellos the strangers replay, split between their addresses: a TPM's calls share
 * one slot, so holding every slot takes as many TPMs as slots.
 */
const VICTIMS = SLOTS;
const SAMPLES = Number(process.env['BENCH_SAMPLES'] ?? 5);
/** A join that has not succeeded by then is counted as turned away. */
const GIVE_UP_MS = 40_000;

/** One node's join as the bootstrapper makes it: retries after retry-after-ms until it has a ticket. */
async function joinWithRetries(
  node: SimulatedNode,
  client: JoinServiceClient,
): Promise<{ ms: number; refusals: number }> {
  const started = performance.now();
  let refusals = 0;
  for (;;) {
    try {
      await node.requestJoin(client);
      return { ms: performance.now() - started, refusals };
    } catch (err) {
      const status = err as grpc.ServiceError;
      if (status.code !== grpc.status.RESOURCE_EXHAUSTED || performance.now() - started > GIVE_UP_MS)
        return { ms: Infinity, refusals };
      refusals++;
      const after = Number(status.metadata.get('retry-after-ms')[0] ?? 1000);
      await new Promise((resolve) => setTimeout(resolve, Math.min(after, 5_000)));
    }
  }
}

/** Strangers, one per client's address: each keeps its share of the victims' hellos open, silent. */
function flood(clients: readonly JoinServiceClient[], victims: readonly SimulatedNode[]): { stop: () => number } {
  let stopped = false;
  let sent = 0;
  const open = new Set<{ cancel: () => void }>();
  const keep = (client: JoinServiceClient, victim: SimulatedNode): void => {
    if (stopped) return;
    sent++;
    const call = silentCall(client, victim.hello());
    const handle = {
      cancel: () => {
        call.stream.cancel();
      },
    };
    open.add(handle);
    void call.error.then(async (err) => {
      open.delete(handle);
      // Refused at once (over a bound): come back after retry-after-ms, as any client would.
      const after = Number(err.metadata.get('retry-after-ms')[0] ?? 0);
      await new Promise((resolve) => setTimeout(resolve, Math.max(after, 50)));
      keep(client, victim);
    });
  };
  for (const [i, victim] of victims.entries()) {
    const client = clients[i % clients.length];
    if (client !== undefined) keep(client, victim);
  }
  return {
    stop: () => {
      stopped = true;
      for (const call of open) call.cancel();
      return sent;
    },
  };
}

function summary(results: readonly { ms: number; refusals: number }[]): string {
  const joined = results
    .filter((r) => Number.isFinite(r.ms))
    .map((r) => r.ms)
    .sort((a, b) => a - b);
  const median = joined[Math.floor(joined.length / 2)];
  const worst = joined[joined.length - 1];
  const refusals = results.reduce((n, r) => n + r.refusals, 0);
  return `${joined.length} of ${results.length} joined; median ${median === undefined ? '-' : `${Math.round(median)} ms`}, slowest ${worst === undefined ? '-' : `${Math.round(worst)} ms`}; ${refusals} refusals on the way`;
}

const fixture: JoinFixture = await startJoinFixture(new MemoryLogger(), { maxConcurrentTickets: SLOTS });
const relays: SourceRelay[] = [];
const clients: JoinServiceClient[] = [];
try {
  const victims = await Promise.all(
    Array.from({ length: VICTIMS }, (_, i) => fixture.node(`victim-${i}`, `10.42.1.${i + 10}`)),
  );
  const genuine = await Promise.all(
    Array.from({ length: 2 * SAMPLES }, (_, i) => fixture.node(`genuine-${i}`, `10.42.2.${i + 10}`)),
  );
  for (let i = 0; i < ADDRESSES; i++) {
    const relay = await startSourceRelay(fixture.service.port, `127.0.0.${i + 2}`);
    relays.push(relay);
    clients.push(
      new JoinServiceClient(`127.0.0.1:${relay.port}`, serviceChannelCredentials(), SERVICE_CHANNEL_OPTIONS),
    );
  }
  const idle = [];
  for (const node of genuine.slice(0, SAMPLES)) idle.push(await joinWithRetries(node, fixture.client));
  const strangers = flood(clients, victims);
  // Let the strangers take what they can before the first genuine call.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const attacked = [];
  for (const node of genuine.slice(SAMPLES)) attacked.push(await joinWithRetries(node, fixture.client));
  const sent = strangers.stop();
  console.log(`silent hellos: ${SLOTS} slots; ${ADDRESSES} stranger addresses replaying ${VICTIMS} genuine hellos`);
  console.log(`  anchor, nobody else calling: ${summary(idle)}`);
  console.log(`  strangers never answering (${sent} hellos sent): ${summary(attacked)}`);
  for (const node of [...victims, ...genuine]) await node.stop();
} finally {
  for (const client of clients) client.close();
  for (const relay of relays) await relay.close();
  await fixture.close();
}
