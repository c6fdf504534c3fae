import { runTypeScript } from '@constellation/testing';
import { describe, expect, it } from 'vitest';

const entry = new URL('./main.ts', import.meta.url).pathname;
const run = (...args: string[]) => runTypeScript(entry, args, { timeoutMs: 30_000 });

describe('constellation-bootstrapper entry point', () => {
  it('prints help with exit code 0', async () => {
    const result = await run('--help');
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toContain('Usage: constellation-bootstrapper');
    expect(result.stdout.toString()).toContain('--log-level <level>');
  });

  it('prints its version', async () => {
    const result = await run('--version');
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it('rejects unknown flags with exit code 2 and names the flag', async () => {
    const result = await run('--frobnicate');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("unknown option '--frobnicate'");
  });

  it('rejects an invalid log level with exit code 2 listing the choices', async () => {
    const result = await run('--log-level', 'loud');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Allowed choices are debug, info, warn, error');
  });

  it('logs JSON to stdout and says plainly that the bootstrap flow is not built yet', async () => {
    const result = await run();
    expect(result.code).toBe(1);
    const first = JSON.parse(result.stdout.toString().split('\n')[0] ?? '') as Record<string, unknown>;
    expect(first).toMatchObject({ service: 'bootstrapper', message: 'bootstrapper starting', level: 'info' });
    expect(result.stderr).toContain('not built yet');
  });
});
