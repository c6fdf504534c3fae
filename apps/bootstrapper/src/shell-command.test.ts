import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDirForTest } from '@constellation/testing';
import { quote } from 'shell-quote';
import { describe, expect, it } from 'vitest';
import { parseCommandLine, shellCommand } from './shell-command.js';

describe('--kubelet-start-command', () => {
  it('splits into words like a shell: quotes keep a path with spaces together', () => {
    expect(parseCommandLine('systemctl start kubelet')).toEqual(['systemctl', 'start', 'kubelet']);
    expect(parseCommandLine(`"/opt/my tools/start kubelet" --node 'worker 1' a\\ b`)).toEqual([
      '/opt/my tools/start kubelet',
      '--node',
      'worker 1',
      'a b',
    ]);
  });

  it('refuses, by name, what only a shell would do, instead of passing it on as text', () => {
    for (const [command, what] of [
      ['systemctl start kubelet && echo done', 'the shell operator &&'],
      ['start-kubelet | tee log', 'the shell operator |'],
      ['start-kubelet > /tmp/log', 'the shell operator >'],
      ['start-kubelet $NODE', 'the variable $NODE'],
      ['start-kubelet # now', 'a comment (#)'],
      ['   ', 'an empty command'],
    ] as const) {
      expect(() => parseCommandLine(command)).toThrow(
        `${what} is not supported; put it in a script and name the script`,
      );
    }
  });

  it('runs a quoted program path with its arguments, without a shell', async () => {
    const dir = join(await tempDirForTest(), 'dir with spaces');
    await mkdir(dir);
    const out = join(dir, 'out.txt');
    const script = `require('node:fs').writeFileSync(process.argv[1], process.argv.slice(2).join('|'))`;
    await shellCommand(quote([process.execPath, '-e', script, out, 'a b', '$HOME', '*']))();
    expect(await readFile(out, 'utf8')).toBe('a b|$HOME|*');
  });

  it('fails with the exit status and what the command said on stderr', async () => {
    const dir = await tempDirForTest();
    const script = join(dir, 'fail.js');
    await writeFile(
      script,
      `process.stderr.write('Failed to start kubelet.service: Unit not found.\\n'); process.exit(5);`,
    );
    await expect(shellCommand(quote([process.execPath, script]))()).rejects.toThrow(
      /exited with 5: Failed to start kubelet\.service: Unit not found\.$/,
    );
  });
});
