import { describe, expect, it } from 'vitest';
import { errorMessage } from './error-message.js';

describe('errorMessage', () => {
  it('returns the message of an Error', () => {
    expect(errorMessage(new TypeError('bad field'))).toBe('bad field');
  });

  it('returns thrown strings as they are', () => {
    expect(errorMessage('plain text')).toBe('plain text');
  });

  it('describes plain objects instead of printing undefined', () => {
    expect(errorMessage({ code: 14 })).toBe('{"code":14}');
  });

  it('survives values JSON cannot describe', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(errorMessage(cyclic)).toBe('[object Object]');
    expect(errorMessage(undefined)).toBe('undefined');
  });
});
