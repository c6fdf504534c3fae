// The clock check on its own, with the API server's Date header written by hand: whole seconds
// (RFC 7231 IMF-fixdate, as Go's net/http and Node's http stamp every answer).
import { describe, expect, it } from 'vitest';
import { ApiServerClock } from './api-server-clock.js';

const SERVER_NOW = Date.parse('2030-01-02T03:04:05.000Z');

function clockAt(start: number): { clock: ApiServerClock; advance: (ms: number) => void } {
  let now = start;
  const clock = new ApiServerClock({ maxSkewMs: 5_000, retryAfterMs: 1_000, now: () => now });
  return { clock, advance: (ms) => (now += ms) };
}

function answerStamped(ms: number): Record<string, string> {
  return { date: new Date(ms).toUTCString() };
}

describe('ApiServerClock', () => {
  it('takes the Date header’s truncation to whole seconds as agreement', () => {
    const { clock } = clockAt(SERVER_NOW + 999); // the server stamped ...:05 for ...:05.999
    expect(clock.skew(answerStamped(SERVER_NOW), SERVER_NOW + 990)).toBeUndefined();
    expect(clock.agreedRecently(10_000)).toBe(true);
  });

  it('says which way and by at least how much the clock is off, beyond the allowance', () => {
    const { clock } = clockAt(SERVER_NOW - 60_000);
    expect(clock.skew(answerStamped(SERVER_NOW), SERVER_NOW - 60_010)).toMatch(
      /^this JoinService's clock is at least 60 s behind the Kubernetes API server's \(allowed: 5 s\)/,
    );
    const ahead = clockAt(SERVER_NOW + 8_000);
    expect(ahead.clock.skew(answerStamped(SERVER_NOW), SERVER_NOW + 7_990)).toMatch(
      /^this JoinService's clock is at least 6 s ahead of the Kubernetes API server's/,
    );
    expect(clock.refusal('off', '; more')).toMatchObject({
      kind: 'unavailable',
      reason: 'clock-skew',
      message: 'off; more',
      retryAfterMs: 1_000,
    });
  });

  it('forgets an agreement once an answer shows the clocks apart, and after the given time', () => {
    const { clock, advance } = clockAt(SERVER_NOW);
    expect(clock.skew(answerStamped(SERVER_NOW), SERVER_NOW)).toBeUndefined();
    advance(10_001);
    expect(clock.agreedRecently(10_000)).toBe(false);
    expect(clock.skew(answerStamped(SERVER_NOW + 10_000), SERVER_NOW + 10_000)).toBeUndefined();
    expect(clock.agreedRecently(10_000)).toBe(true);
    expect(clock.skew(answerStamped(SERVER_NOW + 40_000), SERVER_NOW + 10_000)).toBeDefined();
    expect(clock.agreedRecently(10_000)).toBe(false);
  });

  it('cannot judge an answer without a Date header, and passes it without taking it as agreement', () => {
    const { clock } = clockAt(SERVER_NOW);
    expect(clock.skew({}, SERVER_NOW)).toBeUndefined();
    expect(clock.skew(undefined, SERVER_NOW)).toBeUndefined();
    expect(clock.skew({ date: 'yesterday' }, SERVER_NOW)).toBeUndefined();
    expect(clock.agreedRecently(10_000)).toBe(false);
  });
});
