import { describe, expect, it } from 'vitest';
import { UkiError } from './errors.js';
import { stubLoadOptions } from './load-options.js';

/** A .cmdline section as loaded: these file bytes, then `zeroFill` zeros. */
const section = (bytes: Uint8Array, zeroFill = 0): Parameters<typeof stubLoadOptions>[0] => ({
  fileBytes: bytes,
  zeroFill,
  length: bytes.length + zeroFill,
});
const text = (bytes: Uint8Array): string => stubLoadOptions(section(bytes)).text;

describe('stubLoadOptions (systemd-stub 252: xstrn8_to_16, mangle_stub_cmdline, strsize16)', () => {
  it('passes the command line as UTF-16LE with a UTF-16 NUL', () => {
    const options = stubLoadOptions(section(Buffer.from('console=ttyS0 quiet')));
    expect(options.text).toBe('console=ttyS0 quiet');
    expect(options.bytes).toEqual(Buffer.concat([Buffer.from('console=ttyS0 quiet', 'utf16le'), Buffer.alloc(2)]));
  });

  it('drops leading and trailing whitespace and turns each inner control character into a space', () => {
    expect(text(Buffer.from('\n  root=/dev/vda2\tro\r\nquiet  \n'))).toBe('root=/dev/vda2 ro  quiet');
    expect(text(Buffer.from('a\x7fb\x01c'))).toBe('a b c');
  });

  it('stops at the first NUL, in the section or in its zero fill', () => {
    expect(text(Buffer.from('quiet\0splash'))).toBe('quiet');
    expect(stubLoadOptions(section(Buffer.from('quiet'), 100)).text).toBe('quiet');
  });

  it('decodes UTF-8 as the stub does: BMP kept, astral and surrogates dropped, broken sequences skipped whole', () => {
    expect(text(Buffer.from('name=é€'))).toBe('name=é€');
    expect(text(Buffer.from('a😀b'))).toBe('ab');
    expect(text(Buffer.from([0x61, 0xed, 0xa0, 0x80, 0x62]))).toBe('ab'); // an encoded surrogate
    expect(text(Buffer.from([0x61, 0xe2, 0x41, 0x42, 0x43]))).toBe('aC'); // E2 declares 3 bytes
    expect(text(Buffer.from([0x61, 0x80, 0x62]))).toBe('ab'); // a stray continuation byte
    expect(text(Buffer.from([0x61, 0xc3, 0x00, 0x62]))).toBe('ab'); // the NUL inside is skipped over
    expect(text(Buffer.from([0x61, 0xc0, 0x80, 0x62]))).toBe('a'); // overlong NUL: a 0 unit ends it
    expect(text(Buffer.from([0x61, 0xe2, 0x82]))).toBe('a'); // cut short by the end
  });

  it('refuses a blank command line, which 252 reads past', () => {
    for (const blank of ['', '   ', '\n', '\0x']) {
      expect(() => stubLoadOptions(section(Buffer.from(blank))), JSON.stringify(blank)).toThrow(UkiError);
    }
  });
});
