import { describe, expect, it } from 'vitest';
import { waitFor, withTimeout } from './wait-for.js';

describe('waitFor', () => {
  it('returns the first usable value', async () => {
    let calls = 0;
    const value = await waitFor(() => (++calls >= 3 ? 'ready' : undefined), {
      timeoutMs: 1_000,
      intervalMs: 1,
      description: 'counter',
    });
    expect(value).toBe('ready');
    expect(calls).toBe(3);
  });

  it('fails after its bound and reports what it waited for and the last error', async () => {
    const started = Date.now();
    await expect(
      waitFor(
        () => {
          throw new Error('connection refused');
        },
        { timeoutMs: 100, intervalMs: 10, description: 'the API server' },
      ),
    ).rejects.toThrow(/timed out after 100 ms waiting for the API server: last error: connection refused/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe('withTimeout', () => {
  it('rejects a promise that never settles', async () => {
    await expect(withTimeout(new Promise(() => undefined), 20, 'never')).rejects.toThrow(
      'timed out after 20 ms: never',
    );
  });
});
