import { runTypeScript } from '@constellation/testing';
import { describe, expect, it } from 'vitest';

const entry = new URL('./main.ts', import.meta.url).pathname;
const run = (...args: string[]) => runTypeScript(entry, args, { timeoutMs: 30_000 });

describe('constellation-joinservice entry point', () => {
  it('prints help with the default port', async () => {
    const result = await run('--help');
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toContain('--port <port>');
    expect(result.stdout.toString()).toContain('(default: 9090)');
  });

  it('rejects unknown flags and bad ports with exit code 2', async () => {
    const unknown = await run('--bogus');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--bogus'");
    const badPort = await run('--port', 'http');
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toContain('expected a port number from 1 to 65535, got "http"');
  });
});
