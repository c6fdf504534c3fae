import * as grpc from '@grpc/grpc-js';
import { MemoryLogger } from '@constellation/logger/testing';
import type { IssueRejoinTicketRequest, IssueRejoinTicketResponse } from '@constellation/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';

/*
 * Attacker 3 (a stranger, no TPM), found by a red-team pass: join calls take a slot or a place in
 * a short line before the EK certificate path is checked, and beyond that are refused at once
 * with RESOURCE_EXHAUSTED. IssueRejoinTicket ran the same challenge without that admission: every
 * rejoin hello was checked at once, however many arrived. The stranger's hellos carry a
 * well-formed EK certificate whose signature is broken, so each costs the service a certificate
 * parse and a signature check, and each names another TPM (so the one-call-per-TPM rule does not
 * stop them either).
 */

type Stream = grpc.ClientDuplexStream<IssueRejoinTicketRequest, IssueRejoinTicketResponse>;

const CALLS = 64;
let fixture: JoinFixture;
let node: SimulatedNode;
const logger = new MemoryLogger();

beforeAll(async () => {
  fixture = await startJoinFixture(logger, { maxConcurrentTickets: 1, waitingCallsPerSlot: 1 });
  node = await fixture.node('worker-71', '10.42.0.71');
}, 60_000);

afterAll(async () => {
  await node.stop();
  await fixture.close();
});

/** A rejoin hello with the genuine node's EK certificate, altered inside its signature (a new TPM each time). */
function strangerRejoin(n: number): Promise<grpc.ServiceError | 'challenge'> {
  const hello = node.hello();
  const identity = hello.value.identity;
  if (identity === undefined) throw new Error('no identity');
  const cert = Buffer.from(identity.ekCertificate);
  const flip = (at: number, mask: number): void => {
    cert.writeUInt8(cert.readUInt8(at) ^ mask, at);
  };
  flip(cert.length - 1 - (n % 8), 0xff); // inside the signature: parses, fails verification
  flip(cert.length - 9, n & 0xff);
  const stream: Stream = fixture.client.issueRejoinTicket({ deadline: Date.now() + 20_000 });
  const first = new Promise<grpc.ServiceError | 'challenge'>((resolve) => {
    stream.on('error', resolve);
    stream.once('data', () => {
      resolve('challenge');
      stream.cancel();
    });
  });
  stream.write({ step: { $case: 'hello', value: { ...hello.value, identity: { ...identity, ekCertificate: cert } } } });
  return first;
}

describe('rejoin calls under a flood of hellos (attacker 3)', () => {
  it('are shed before the EK certificate check, like join calls, once the slots and the line are taken', async () => {
    const outcomes = await Promise.all(Array.from({ length: CALLS }, (_, i) => strangerRejoin(i)));
    const byKind = new Map<string, number>();
    for (const o of outcomes) {
      const key = o === 'challenge' ? 'challenge' : `${grpc.status[o.code]}: ${o.details.slice(0, 90)}`;
      byKind.set(key, (byKind.get(key) ?? 0) + 1);
    }
    const seen = JSON.stringify([...byKind]);
    const errors = outcomes.filter((o): o is grpc.ServiceError => o !== 'challenge');
    const checked = errors.filter((o) => o.code === grpc.status.PERMISSION_DENIED);
    const shed = errors.filter((o) => o.code === grpc.status.RESOURCE_EXHAUSTED);
    // With 1 slot and 1 place in line, hellos that arrive while both are taken are turned away
    // before any certificate work, told when to come back; before, every one was checked.
    expect(shed.length, seen).toBeGreaterThan(0);
    expect(shed[0]?.metadata.get('retry-after-ms')[0], seen).toMatch(/^\d+$/);
    expect(checked.length + shed.length, seen).toBe(CALLS);
    // The log says that calls are shed, once, with what the first node was told; a line per call
    // buried the log in storms. Each one is still there at debug level.
    const saidAtInfo = logger.entries.filter((e) => e.level === 'info' && e.message === 'shedding calls for load');
    expect(saidAtInfo).toHaveLength(1);
    expect(saidAtInfo[0]?.fields['refusal']).toMatch(/joins are being served, .* retry in \d+ ms/);
    const perCall = logger.entries.filter(
      (e) => e.message === 'challenge refused' && e.fields['reason'] === 'admission',
    );
    expect(perCall.map((e) => e.level)).toEqual(shed.map(() => 'debug'));
  }, 60_000);

  it('still serves a genuine rejoin once the flood is over', async () => {
    await node.requestJoin(fixture.client);
    const ticket = await node.requestRejoin(fixture.client);
    expect(ticket.stateDiskKey).toHaveLength(32);
  }, 60_000);
});
