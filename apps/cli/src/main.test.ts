import { runTypeScript } from '@constellation/testing';
import { describe, expect, it } from 'vitest';

const entry = new URL('./main.ts', import.meta.url).pathname;
const run = (...args: string[]) => runTypeScript(entry, args, { timeoutMs: 30_000 });

describe('constellation CLI entry point', () => {
  it('lists every command in --help, with examples', async () => {
    const result = await run('--help');
    expect(result.code).toBe(0);
    const help = result.stdout.toString();
    for (const command of ['config', 'init|apply', 'verify', 'status', 'recover', 'mini']) {
      expect(help).toContain(command);
    }
    expect(help).toContain('Examples:');
  });

  it('exits 2 for unknown flags and for invalid values, naming them', async () => {
    const unknown = await run('mini', 'up', '--nodes', '3');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--nodes'");
    const invalid = await run('mini', 'up', '--workers', 'many');
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('expected a whole number from 0 to 64, got "many"');
    const missing = await run('verify');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("required option '--node <host[:port]>' not specified");
  });

  it('says plainly that verify is not built yet, with a failing exit code', async () => {
    const result = await run('verify', '--node', '127.0.0.1:9000');
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('error: constellation verify is not built yet (tracked in issue 7)\n');
  });
});
