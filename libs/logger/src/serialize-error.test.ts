import { describe, expect, it } from 'vitest';
import { serializeError } from './serialize-error.js';

describe('serializeError', () => {
  it('keeps name, message, stack and code', () => {
    const err = Object.assign(new TypeError('bad port'), { code: 'ERR_BAD_PORT' });
    expect(serializeError(err)).toMatchObject({ name: 'TypeError', message: 'bad port', code: 'ERR_BAD_PORT' });
    expect(serializeError(err).stack).toContain('bad port');
  });

  it('describes thrown non-errors instead of dropping them', () => {
    expect(serializeError('plain string')).toEqual({ name: 'NonError', message: 'plain string' });
    expect(serializeError({ n: 1n })).toEqual({ name: 'NonError', message: '{"n":"1"}' });
  });

  it('stops following self-referencing cause chains', () => {
    const err = new Error('loop');
    (err as { cause?: unknown }).cause = err;
    let depth = 0;
    let current = serializeError(err).cause;
    while (typeof current === 'object') {
      depth++;
      current = current.cause;
    }
    expect(depth).toBe(5);
  });
});
