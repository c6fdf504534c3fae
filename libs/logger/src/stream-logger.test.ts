import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './stream-logger.js';
import { REDACTED } from './sanitize-fields.js';

function capture(): { stream: PassThrough; lines: () => string[] } {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
  return {
    stream,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((line) => line !== ''),
  };
}

function parse(line: string | undefined): Record<string, unknown> {
  expect(line).toBeDefined();
  return JSON.parse(line ?? '') as Record<string, unknown>;
}

describe('createLogger', () => {
  it('writes one JSON object per entry with service, level, timestamp and fields', () => {
    const out = capture();
    const log = createLogger({ service: 'bootstrapper', streams: [out.stream] });
    log.info('listening', { port: 9000 });
    const entry = parse(out.lines()[0]);
    expect(entry).toMatchObject({ service: 'bootstrapper', level: 'info', message: 'listening', port: 9000 });
    expect(typeof entry['timestamp']).toBe('string');
  });

  it('writes the lines winston wrote: keys sorted at every depth, fields may set timestamp, not level', () => {
    const out = capture();
    const log = createLogger({ service: 'svc', streams: [out.stream] });
    log.info('hello', { z: 1, a: { d: 2, b: [{ y: 1, c: 2 }] }, timestamp: 'T', level: 'error', gone: undefined });
    log.info('joined', { message: 'after 2 attempts', timestamp: 'T' });
    expect(out.lines()).toEqual([
      '{"a":{"b":[{"c":2,"y":1}],"d":2},"level":"info","message":"hello","service":"svc","timestamp":"T","z":1}',
      '{"level":"info","message":"joined after 2 attempts","service":"svc","timestamp":"T"}',
    ]);
  });

  it('writes every entry to every stream, synchronously', () => {
    const first = capture();
    const second = capture();
    const log = createLogger({ service: 'svc', level: 'debug', streams: [first.stream, second.stream] });
    log.debug('shown at debug');
    expect(first.lines()).toHaveLength(1);
    expect(second.lines()).toEqual(first.lines());
    expect(Date.parse(String(parse(first.lines()[0])['timestamp']))).not.toBeNaN();
  });

  it('serialises nested errors with message, stack and cause instead of {}', () => {
    const out = capture();
    const log = createLogger({ service: 'svc', streams: [out.stream] });
    const cause = Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
    log.error('join failed', { err: new Error('no ticket', { cause }) });
    const entry = parse(out.lines()[0]);
    const err = entry['err'] as Record<string, unknown>;
    expect(err['message']).toBe('no ticket');
    expect(String(err['stack'])).toContain('stream-logger.test.ts');
    expect(err['cause']).toMatchObject({ message: 'connection refused', code: 'ECONNREFUSED' });
  });

  it('redacts secret-looking fields at any depth and summarises buffers and bigints', () => {
    const out = capture();
    const log = createLogger({ service: 'svc', streams: [out.stream] });
    const secret = 'd3adb33f-very-secret';
    log.info('ticket issued', {
      token: secret,
      ticket: { stateDiskKey: secret, measurementSecret: secret, endpoint: '10.0.0.1:6443' },
      masterSecret: Buffer.from(secret),
      publicKey: Buffer.alloc(65),
      generation: 12n,
    });
    const text = out.lines().join('\n');
    expect(text).not.toContain(secret);
    const entry = parse(out.lines()[0]);
    expect(entry['token']).toBe(REDACTED);
    expect(entry['ticket']).toEqual({ stateDiskKey: REDACTED, measurementSecret: REDACTED, endpoint: '10.0.0.1:6443' });
    expect(entry['publicKey']).toBe('<65 bytes>');
    expect(entry['generation']).toBe('12');
  });

  it('child loggers add their fields to every entry, and levels below the threshold are dropped', () => {
    const out = capture();
    const log = createLogger({ service: 'svc', level: 'info', streams: [out.stream] });
    const child = log.child({ component: 'join-client' }).child({ attempt: 2 });
    child.debug('not shown');
    child.warn('retrying');
    const lines = out.lines();
    expect(lines).toHaveLength(1);
    expect(parse(lines[0])).toMatchObject({ component: 'join-client', attempt: 2, level: 'warn' });
  });

  it('text format prints readable lines without JSON envelopes', () => {
    const out = capture();
    const log = createLogger({ service: 'cli', format: 'text', streams: [out.stream] });
    log.info('wrote kubeconfig', { path: '/tmp/k' });
    log.warn('retrying', { attempt: 2 });
    expect(out.lines()).toEqual(['wrote kubeconfig path=/tmp/k', 'warn: retrying attempt=2']);
  });
});
