import { runTypeScript } from '@constellation/testing';
import { describe, expect, it } from 'vitest';

const fixture = new URL('./held-open.fixture.ts', import.meta.url).pathname;

describe('exitWhenClosed', () => {
  it('ends a process that something still holds open after closing, and names what held it', async () => {
    const result = await runTypeScript(fixture, ['held', '300'], { timeoutMs: 30_000 });
    expect(result.code).toBe(0);
    const line = JSON.parse(result.stdout.toString().trim()) as { message: string; openResources: string[] };
    expect(line.message).toBe('joinservice still held open after closing; exiting');
    expect(line.openResources).toContain('Timeout');
  });

  it('holds nothing open itself: a process with nothing left exits without waiting for it', async () => {
    // Were its timer holding the process, it would fire after 20 s and print the warning.
    const result = await runTypeScript(fixture, ['idle', '20000'], { timeoutMs: 15_000 });
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('');
  });
});
