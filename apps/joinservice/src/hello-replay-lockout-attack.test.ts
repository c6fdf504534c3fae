import * as grpc from '@grpc/grpc-js';
import { SERVICE_CHANNEL_OPTIONS, serviceChannelCredentials } from '@constellation/atls';
import { MemoryLogger } from '@constellation/logger/testing';
import { JoinServiceClient } from '@constellation/proto';
import { startSourceRelay, waitFor } from '@constellation/testing';
import type { SourceRelay } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';
import { silentCall } from './silent-call.fixture.js';
import type { JoinStream } from './silent-call.fixture.js';

/*
 * A stranger without a TPM (attacker 1) holds a copy of a genuine node's hello: its EK
 * certificate and AK are no secret, and a fake JoinService collects them. It sends the hello from
 * its own address, never answers the challenge, and sends it again the moment each call ends.
 * With one call per TPM, the node was told "one at a time" on every try, for as long as the
 * stranger went on. Now each network source has its own place per TPM, the TPM's calls share one
 * slot, and whichever call answers its challenge wins.
 */

const CHALLENGE_TTL_MS = 1_500;
let fixture: JoinFixture;
let victim: SimulatedNode;
let bystander: SimulatedNode;
const relays: SourceRelay[] = [];
const clients: JoinServiceClient[] = [];

beforeAll(async () => {
  fixture = await startJoinFixture(new MemoryLogger(), { maxConcurrentTickets: 2, challengeTtlMs: CHALLENGE_TTL_MS });
  victim = await fixture.node('worker-41', '10.42.0.41');
  bystander = await fixture.node('worker-42', '10.42.0.42');
});

afterAll(async () => {
  for (const client of clients) client.close();
  await Promise.all(relays.map((relay) => relay.close()));
  await victim.stop();
  await bystander.stop();
  await fixture.close();
});

/** A JoinService client whose connections come from `address`, another machine to the service. */
async function clientFrom(address: string): Promise<JoinServiceClient> {
  const relay = await startSourceRelay(fixture.service.port, address);
  relays.push(relay);
  const client = new JoinServiceClient(`127.0.0.1:${relay.port}`, serviceChannelCredentials(), SERVICE_CHANNEL_OPTIONS);
  clients.push(client);
  return client;
}

describe('a replayed hello from another address (attacker 1)', () => {
  it('no longer keeps the node out: the stranger replays it the moment each call ends, and the node joins at its first try', async () => {
    const stranger = await clientFrom('127.0.0.2');
    const replayed = victim.hello();
    const replay = { stopped: false };
    let challenged = 0;
    const refusals: string[] = [];
    let current: JoinStream | undefined;
    // One call of the stranger's is always under way: a new one the moment the last one ends.
    const replaying = (async () => {
      while (!replay.stopped) {
        const call = silentCall(stranger, replayed);
        current = call.stream;
        if ((await call.first) === 'challenge') challenged++;
        const ended = await call.error;
        // Its calls end at the challenge's time bound, or when the test cancels the last one.
        if (ended.code !== grpc.status.DEADLINE_EXCEEDED && ended.code !== grpc.status.CANCELLED)
          refusals.push(ended.details);
      }
    })();
    try {
      await waitFor(() => challenged > 0, { timeoutMs: 10_000, description: "the stranger's first challenge" });
      // Across two of the stranger's calls: the node asks while one is outstanding, and again later.
      for (let attempt = 0; attempt < 2; attempt++) {
        const { ticket } = await victim.requestJoin(fixture.client);
        expect(ticket.kubeletClientCert.length).toBeGreaterThan(0);
        await new Promise((resolve) => setTimeout(resolve, CHALLENGE_TTL_MS));
      }
      // The stranger kept its call going throughout: each ended only at the challenge's time bound.
      expect(challenged).toBeGreaterThanOrEqual(2);
      expect(refusals).toEqual([]);
    } finally {
      replay.stopped = true;
      current?.cancel();
      await replaying;
    }
  }, 40_000);

  it('still gives one address one call per TPM at a time, saying so', async () => {
    const stranger = await clientFrom('127.0.0.3');
    const holder = silentCall(stranger, victim.hello());
    expect(await holder.first).toBe('challenge');
    const second = await silentCall(stranger, victim.hello()).first;
    expect(second).not.toBe('challenge');
    expect((second as grpc.ServiceError).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect((second as grpc.ServiceError).details).toMatch(
      /^this TPM \(EK certificate sha256:[0-9a-f]{64}\) already has a call from this address in line or being served; one at a time/,
    );
    holder.stream.cancel();
  }, 20_000);

  it("shares one slot among a TPM's calls from several addresses: the other slot stays free for other nodes", async () => {
    const sources = [await clientFrom('127.0.0.4'), await clientFrom('127.0.0.5'), await clientFrom('127.0.0.6')];
    const calls = sources.map((client) => silentCall(client, victim.hello()));
    // Each address's call is challenged at once, none waits in line behind another.
    expect(await Promise.all(calls.map((call) => call.first))).toEqual(['challenge', 'challenge', 'challenge']);
    const started = Date.now();
    const { ticket } = await bystander.requestJoin(fixture.client);
    expect(ticket.kubeletClientCert.length).toBeGreaterThan(0);
    expect(Date.now() - started).toBeLessThan(CHALLENGE_TTL_MS);
    for (const call of calls) call.stream.cancel();
  }, 20_000);
});
