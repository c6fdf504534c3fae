import { Command } from '@commander-js/extra-typings';
import { describe, expect, it } from 'vitest';
import { ExitCode } from './exit-code.js';
import { parsePort } from './option-parsers.js';
import { runProgram } from './run-program.js';
import { NotBuiltYetError, UsageError } from './usage-error.js';

function program(action: () => void = () => undefined): Command {
  const root = new Command('demo').version('1.2.3').description('demo program');
  root
    .command('serve')
    .description('serve things')
    .option('--port <port>', 'port to listen on', (v) => parsePort(v))
    .action(action);
  return root;
}

async function run(argv: string[], action?: () => void): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runProgram(program(action), ['node', 'demo', ...argv], {
    stdout: (t) => (out += t),
    stderr: (t) => (err += t),
  });
  return { code, out, err };
}

describe('runProgram', () => {
  it('exits 0 for --help and --version and prints them', async () => {
    const help = await run(['--help']);
    expect(help.code).toBe(ExitCode.Ok);
    expect(help.out).toContain('Usage: demo');
    const version = await run(['--version']);
    expect(version).toMatchObject({ code: ExitCode.Ok, out: '1.2.3\n' });
  });

  it('exits 2 naming an unknown flag, also on subcommands', async () => {
    const top = await run(['--bogus']);
    expect(top.code).toBe(ExitCode.Usage);
    expect(top.err).toContain("unknown option '--bogus'");
    const sub = await run(['serve', '--nope']);
    expect(sub.code).toBe(ExitCode.Usage);
    expect(sub.err).toContain("unknown option '--nope'");
  });

  it('exits 2 with the expected range for an invalid flag value', async () => {
    const result = await run(['serve', '--port', '70000']);
    expect(result.code).toBe(ExitCode.Usage);
    expect(result.err).toContain('expected a port number from 1 to 65535, got "70000"');
  });

  it('maps UsageError to 2, other errors to 1, with causes spelled out', async () => {
    const usage = await run(['serve'], () => {
      throw new UsageError('config field "measurements.15.expected": expected 64 hex characters');
    });
    expect(usage.code).toBe(ExitCode.Usage);
    expect(usage.err).toContain('measurements.15.expected');
    const failure = await run(['serve'], () => {
      throw new Error('dial node', { cause: new Error('connection refused') });
    });
    expect(failure).toMatchObject({ code: ExitCode.Failure, err: 'error: dial node: connection refused\n' });
    const notBuilt = await run(['serve'], () => {
      throw new NotBuiltYetError('serving', 'issue 7');
    });
    expect(notBuilt).toMatchObject({
      code: ExitCode.Failure,
      err: 'error: serving is not built yet (tracked in issue 7)\n',
    });
  });

  it("prints the other side's control characters as escapes, keeping newlines", async () => {
    const failure = await run(['serve'], () => {
      throw new Error('node refused', { cause: new Error('\u001b]0;pwned\u0007\u001b[2Jall fine\r\nnext line\u009b') });
    });
    expect(failure.err).toBe(
      'error: node refused: \\u001b]0;pwned\\u0007\\u001b[2Jall fine\\u000d\nnext line\\u009b\n',
    );
  });
});
