import { EventEmitter } from 'node:events';
import type * as grpc from '@grpc/grpc-js';
import { DummyValidator } from '@constellation/attestation/testing';
import type { ChallengeClientMessage, ChallengeServerMessage } from './challenge-messages.js';
import { CHALLENGE_PROTOCOL_VERSION } from './challenge-messages.js';
import { describe, expect, it } from 'vitest';
import { serveChallenge } from './challenge-server.js';

/*
 * A stranger's call that waits in line for a slot and goes away at the moment the slot is handed
 * to it (attacker 3). gRPC reports a client's cancellation as 'cancelled' on the call, with no
 * 'error' or 'end'; when the hand-over and the cancellation are handled in the same turn (two
 * RST_STREAM frames in one packet), the admitter's own listeners have not seen the cancellation
 * yet. The slot must come back at once, not after the challenge's time bound.
 */

type Stream = grpc.ServerDuplexStream<ChallengeClientMessage, ChallengeServerMessage>;

/** The parts of a server call the challenge uses; `cancel()` does what grpc-js does on RST_STREAM. */
class CallStandIn extends EventEmitter {
  cancelled = false;
  readonly written: ChallengeServerMessage[] = [];
  getPeer(): string {
    return 'ipv4:127.0.0.1:1';
  }
  write(message: ChallengeServerMessage): boolean {
    this.written.push(message);
    return true;
  }
  end(): void {
    this.emit('finish');
  }
  cancel(): void {
    this.cancelled = true;
    this.emit('cancelled');
  }
}

const validator = new DummyValidator();
const hello: ChallengeClientMessage = {
  step: {
    $case: 'hello',
    value: {
      attestationVariant: validator.variant.name,
      protocolVersion: CHALLENGE_PROTOCOL_VERSION,
      akPublic: Buffer.alloc(0),
      serviceNonce: Buffer.alloc(0),
    },
  },
};

/** A call in line whose slot the test hands over: `handOver` admits it; `released` counts releases. */
function callInLine(): { call: CallStandIn; handOver: () => void; released: () => number } {
  const call = new CallStandIn();
  let admit: (release: () => void) => void = () => undefined;
  let released = 0;
  serveChallenge(call as unknown as Stream, {
    validators: [validator],
    challengeTtlMs: 10_000,
    handle: () => Promise.resolve(Buffer.alloc(0)),
    admit: () =>
      new Promise<() => void>((resolve) => {
        admit = resolve;
      }),
  });
  call.emit('data', hello);
  return {
    call,
    handOver: () => {
      admit(() => released++);
    },
    released: () => released,
  };
}

describe('a call admitted from the line as it is cancelled', () => {
  it('gives the slot back at once and is never challenged', async () => {
    const { call, handOver, released } = callInLine();
    // The slot is handed over, and in the same turn the client's cancellation arrives.
    handOver();
    call.cancel();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(released()).toBe(1);
    expect(call.written).toEqual([]);
  });

  it('still runs the challenge for a call admitted while it stays', async () => {
    const { call, handOver, released } = callInLine();
    handOver();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(call.written.map((m) => m.step?.$case)).toEqual(['challenge']);
    expect(released()).toBe(0);
    call.emit('error', new Error('client went away'));
    expect(released()).toBe(1);
  });
});
