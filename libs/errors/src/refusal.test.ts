import { describe, expect, it } from 'vitest';
import { Refusal } from './refusal.js';

describe('Refusal', () => {
  it('is retryable only when something is in the way or a budget is used up', () => {
    expect(new Refusal('unavailable', 'lease-held', 'busy', { retryAfterMs: 500 }).retryable).toBe(true);
    expect(new Refusal('exhausted', 'rate-limited', 'slow down').retryable).toBe(true);
    expect(new Refusal('denied', 'unregistered-ek', 'who are you').retryable).toBe(false);
    expect(new Refusal('invalid-request', 'bad-csr', 'bad CSR').retryable).toBe(false);
  });

  it('keeps reason, wait and cause for the edge that maps it', () => {
    const cause = new Error('connect ECONNREFUSED');
    const refusal = new Refusal('unavailable', 'registry-unavailable', 'registry down', { retryAfterMs: 2_000, cause });
    expect(refusal).toMatchObject({ reason: 'registry-unavailable', retryAfterMs: 2_000, message: 'registry down' });
    expect(refusal.cause).toBe(cause);
  });
});
