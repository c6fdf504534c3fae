import { runTypeScript } from '@constellation/testing';
import { describe, expect, it } from 'vitest';

const entry = new URL('./main.ts', import.meta.url).pathname;
const run = (...args: string[]) => runTypeScript(entry, args, { timeoutMs: 30_000 });

describe('constellation-bootstrapper entry point', () => {
  it('prints help with its defaults, and its version', async () => {
    const help = await run('--help');
    expect(help.code).toBe(0);
    const text = help.stdout.toString();
    expect(text).toContain('Usage: constellation-bootstrapper');
    expect(text).toContain('(default: 9000)');
    expect(text).toContain('--on-fatal <action>');
    const version = await run('--version');
    expect(version.stdout.toString()).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it('rejects unknown flags and bad values with exit code 2 naming them', async () => {
    const unknown = await run('--frobnicate');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--frobnicate'");
    const tpm = await run('--tpm', 'tcp://x');
    expect(tpm.code).toBe(2);
    expect(tpm.stderr).toContain(
      'expected a device path like /dev/tpmrm0, swtpm:<socket path> or swtpm:<host>:<port>, got "tcp://x"',
    );
    const level = await run('--log-level', 'loud');
    expect(level.stderr).toContain('Allowed choices are debug, info, warn, error');
  });

  it('fails with a clear error and exit code 1 when the TPM cannot be reached, logging JSON', async () => {
    const result = await run('--tpm', 'swtpm:127.0.0.1:1', '--root', '/nonexistent-root');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: swtpm at 127\.0\.0\.1:1: connect ECONNREFUSED/);
    const first = JSON.parse(result.stdout.toString().split('\n')[0] ?? '') as Record<string, unknown>;
    expect(first).toMatchObject({ service: 'bootstrapper', message: 'bootstrapper starting', tpm: 'swtpm' });
  });
});
