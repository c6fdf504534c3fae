import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@constellation/logger';
import { rebootAction } from './fatal-action.js';

/** A logger whose JSON lines are kept for the assertions. */
function recordingLogger(): { logger: ReturnType<typeof createLogger>; messages: () => string[] } {
  const stream = new PassThrough();
  const lines: string[] = [];
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  const logger = createLogger({ service: 'test', streams: [stream] });
  return { logger, messages: () => lines.map((line) => (JSON.parse(line) as { message: string }).message) };
}

describe('rebootAction', () => {
  it('kills a reboot command that hangs and ends, saying so (a wedged systemd held the node for ever)', async () => {
    const { logger, messages } = recordingLogger();
    const started = Date.now();
    await rebootAction(logger, { command: ['sleep', '30'], timeoutMs: 200 })(new Error('boom'));
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(messages()).toEqual([
      'unrecoverable failure after the point of no return; rebooting',
      'the reboot command did not finish within 200 ms and was killed; exiting so that the bootstrapper is started again',
    ]);
  });

  it('says how a failed reboot command ended', async () => {
    const { logger, messages } = recordingLogger();
    await rebootAction(logger, { command: ['sh', '-c', 'exit 3'] })(new Error('boom'));
    expect(messages()[1]).toBe(
      'the reboot command failed (exit code 3); exiting so that the bootstrapper is started again',
    );
  });

  it('says when the reboot command cannot be started', async () => {
    const { logger, messages } = recordingLogger();
    await rebootAction(logger, { command: ['/nonexistent/systemctl', 'reboot'] })(new Error('boom'));
    expect(messages()[1]).toMatch(/^the reboot command could not be started: spawn \/nonexistent\/systemctl ENOENT;/);
  });

  it('adds nothing when the reboot was queued', async () => {
    const { logger, messages } = recordingLogger();
    await rebootAction(logger, { command: ['true'] })(new Error('boom'));
    expect(messages()).toEqual(['unrecoverable failure after the point of no return; rebooting']);
  });
});
