import * as grpc from '@grpc/grpc-js';
import { MemoryLogger } from '@constellation/logger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';
import { silentCall } from './silent-call.fixture.js';
import type { JoinHello, SilentCall } from './silent-call.fixture.js';

/*
 * The join line under a stranger without a TPM (attackers 1 and 3): it replays a genuine node's
 * hello (the EK certificate and AK are public), so its calls are well-formed. Its calls took the
 * one slot until their challenges expired and filled the line behind it; since issue 50 a call
 * waiting for its node's answer holds no slot, so the line no longer fills behind silence (its
 * mechanics under load, a full line and callers leaving it every way, are concurrency-limit's tests).
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

describe('JoinService join line against replayed hellos (attackers 1 and 3)', () => {
  it('a silent call holds no slot: the calls behind it are served at once, and a genuine node joins at its first call', async () => {
    const holder = strangerCall();
    expect(await settledWithin(holder.first, 5_000)).toBe('challenge');
    // One place per claimed TPM: hellos naming other TPMs. Before, they waited in line behind the
    // silent holder until its challenge expired; now each is served at once (and refused by the
    // EK check, naming it).
    const behind = Array.from({ length: 4 }, (_, i) => strangerCall(garbageHello(i)));
    for (const call of behind) {
      const first = await settledWithin(call.first, 3_000);
      expect(first).not.toBe('pending');
      expect((first as grpc.ServiceError).details).toMatch(/EK certificate is followed by 1 bytes/);
    }
    const { ticket } = await genuine.requestJoin(fixture.client);
    expect(ticket.kubeletClientCert.length).toBeGreaterThan(0);
    holder.stream.cancel();
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

  it('a call that goes away while its node answers gives its place back; its slot went back at the challenge', async () => {
    const holder = strangerCall();
    expect(await settledWithin(holder.first, 5_000)).toBe('challenge');
    // Its place (this TPM, this address) is held while it waits, its slot is not.
    const same = await settledWithin(strangerCall().first, 3_000);
    expect((same as grpc.ServiceError).details).toMatch(/already has a call from this address in line or being served/);
    holder.stream.cancel();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const probe = strangerCall();
    expect(await settledWithin(probe.first, 2_000)).toBe('challenge');
    probe.stream.cancel();
  }, 20_000);
});
