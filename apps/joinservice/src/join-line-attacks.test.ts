import * as grpc from '@grpc/grpc-js';
import { MemoryLogger } from '@constellation/logger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';
import { silentCall } from './silent-call.fixture.js';
import type { JoinHello, SilentCall } from './silent-call.fixture.js';

/*
 * The join line under a stranger without a TPM (attackers 1 and 3): it replays a genuine node's
 * hello (the EK certificate and AK are public), so its calls are well-formed, take the one slot and
 * fill the line, and then it leaves them every way a stream can end while waiting.
 */

type Hello = JoinHello;

let fixture: JoinFixture;
let victim: SimulatedNode;
let genuine: SimulatedNode;
let replayed: Hello;

beforeAll(async () => {
  fixture = await startJoinFixture(new MemoryLogger(), { maxConcurrentTickets: 1, waitingCallsPerSlot: 4 });
  victim = await fixture.node('worker-21', '10.42.0.21');
  genuine = await fixture.node('worker-22', '10.42.0.22');
  replayed = victim.hello();
});

afterAll(async () => {
  await victim.stop();
  await genuine.stop();
  await fixture.close();
});

type StrangerCall = SilentCall;

const strangerCall = (hello: Hello = replayed): StrangerCall => silentCall(fixture.client, hello);

/**
 * A hello naming another TPM than the victim's: the victim's with a byte after its EK
 * certificate. A stranger can make as many as it likes; each fails the EK check once admitted.
 */
function garbageHello(n: number): Hello {
  const identity = replayed.value.identity;
  if (identity === undefined) throw new Error('the replayed hello has no identity');
  return {
    $case: 'hello',
    value: {
      ...replayed.value,
      identity: { ...identity, ekCertificate: Buffer.concat([identity.ekCertificate, Buffer.from([n])]) },
    },
  };
}

const settledWithin = <T>(promise: Promise<T>, ms: number): Promise<T | 'pending'> =>
  Promise.race([
    promise,
    new Promise<'pending'>((resolve) =>
      setTimeout(() => {
        resolve('pending');
      }, ms),
    ),
  ]);

async function joinRefusal(node: SimulatedNode): Promise<grpc.ServiceError> {
  try {
    await node.requestJoin(fixture.client);
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error('the join was expected to be refused');
}

describe('JoinService join line against replayed hellos (attackers 1 and 3)', () => {
  it('a full line refuses a genuine node at once, retryable, and a line left every way frees every slot', async () => {
    const holder = strangerCall();
    expect(await settledWithin(holder.first, 5_000)).toBe('challenge');
    // One place per claimed TPM: the line is filled with hellos naming other TPMs.
    const waiting = Array.from({ length: 4 }, (_, i) => strangerCall(garbageHello(i)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const call of waiting) expect(await settledWithin(call.first, 0)).toBe('pending');

    // Line full: a genuine node is told to come back, clearly and without waiting for the line.
    const started = Date.now();
    const refusal = await joinRefusal(genuine);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(refusal.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(refusal.details).toMatch(/joins are being served, 4 are in line/);
    const retryAfter = Number(refusal.metadata.get('retry-after-ms')[0]);
    expect(retryAfter).toBeGreaterThanOrEqual(500);
    expect(retryAfter).toBeLessThanOrEqual(10_000);

    // The stranger leaves: cancelled, half-closed, a message out of turn, and a plain cancel.
    const [cancelled, halfClosed, chatty, dropped] = waiting as [
      StrangerCall,
      StrangerCall,
      StrangerCall,
      StrangerCall,
    ];
    cancelled.stream.cancel();
    halfClosed.stream.end();
    chatty.stream.write({ step: replayed });
    const chattyError = await settledWithin(chatty.error, 3_000);
    expect(chattyError).not.toBe('pending');
    expect((chattyError as grpc.ServiceError).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((chattyError as grpc.ServiceError).details).toMatch(/challenge has not been sent yet/);
    const halfClosedError = await settledWithin(halfClosed.error, 3_000);
    expect((halfClosedError as grpc.ServiceError).details).toMatch(/stream ended before the exchange finished/);
    dropped.stream.cancel();
    holder.stream.cancel();

    // Every slot is free again: the genuine node joins well before the abandoned challenge's TTL.
    const rejoinStarted = Date.now();
    const { ticket } = await genuine.requestJoin(fixture.client);
    expect(ticket.kubeletClientCert.length).toBeGreaterThan(0);
    expect(Date.now() - rejoinStarted).toBeLessThan(4_000);
    // And the slot is handed back after it: a new caller is challenged at once, not put in line.
    const probe = strangerCall();
    expect(await settledWithin(probe.first, 2_000)).toBe('challenge');
    probe.stream.cancel();
  }, 40_000);

  it('replays of one hello take one place, not the line: the others are refused at once, saying why', async () => {
    const holder = strangerCall();
    expect(await settledWithin(holder.first, 5_000)).toBe('challenge');
    // Without one place per claimed TPM, these filled the line and turned genuine nodes away.
    const replays = Array.from({ length: 6 }, () => strangerCall());
    for (const replay of replays) {
      const first = await settledWithin(replay.first, 3_000);
      expect(first).not.toBe('pending');
      expect(first).not.toBe('challenge');
      const refusal = first as grpc.ServiceError;
      expect(refusal.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(refusal.details).toMatch(
        /^this TPM \(EK certificate sha256:[0-9a-f]{64}\) already has a call from this address in line or being served; one at a time/,
      );
      expect(Number(refusal.metadata.get('retry-after-ms')[0])).toBeGreaterThan(0);
    }
    // Operators see why: counted apart from the other refusals.
    const metrics = await (await fetch(`http://127.0.0.1:${fixture.service.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(
      /constellation_joinservice_ticket_refusals_total\{kind="join",reason="tpm-call-in-progress"\} 6/,
    );
    // The line has room: a genuine node waits for the one slot instead of being turned away.
    const joining = genuine.requestJoin(fixture.client);
    await new Promise((resolve) => setTimeout(resolve, 300));
    holder.stream.cancel();
    const { ticket } = await joining;
    expect(ticket.kubeletClientCert.length).toBeGreaterThan(0);
    // The place is given back with the call: the TPM's hello is taken again.
    const again = strangerCall();
    expect(await settledWithin(again.first, 3_000)).toBe('challenge');
    again.stream.cancel();
  }, 30_000);

  it('a call admitted from the line just as it goes away gives its slot back', async () => {
    const holder = strangerCall();
    expect(await settledWithin(holder.first, 5_000)).toBe('challenge');
    const next = strangerCall(garbageHello(9));
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The slot passes to `next` and `next` goes away in the same moment.
    holder.stream.cancel();
    next.stream.cancel();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const probe = strangerCall();
    expect(await settledWithin(probe.first, 2_000)).toBe('challenge');
    probe.stream.cancel();
  }, 20_000);
});
