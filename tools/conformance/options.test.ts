import { describe, expect, it } from 'vitest';
import { MODES, UsageError, parseOptions } from './options.js';

describe('the conformance runner’s options', () => {
  it('runs the quick mode by default: the Conformance specs that are neither Serial, Disruptive nor Slow', () => {
    const options = parseOptions([]);
    expect(options).toMatchObject({ mode: 'quick', labelFilter: MODES.quick.labelFilter, timeout: '3h' });
  });

  it('runs every Conformance spec in certified mode, with a longer bound', () => {
    expect(parseOptions(['--mode', 'certified'])).toMatchObject({
      mode: 'certified',
      labelFilter: 'Conformance',
      timeout: '6h',
    });
    expect(parseOptions(['--mode', 'certified', '--timeout', '8h'])).toMatchObject({ timeout: '8h' });
  });

  it('refuses a label filter beside the certified mode, and an unknown mode, saying what to do', () => {
    expect(() => parseOptions(['--mode', 'certified', '--label-filter', 'Conformance && Slow'])).toThrow(
      /--label-filter and --mode certified: the certified mode runs every Conformance spec; narrow it with --focus or --skip/,
    );
    expect(() => parseOptions(['--mode', 'full'])).toThrow(UsageError);
    expect(() => parseOptions(['--mode', 'full'])).toThrow(/Allowed choices are quick, certified/);
  });

  it('keeps a label filter given in the quick mode, and passes what follows -- to e2e.test', () => {
    expect(parseOptions(['--label-filter', 'Conformance && Slow', '--', '--x=1'])).toMatchObject({
      mode: 'quick',
      labelFilter: 'Conformance && Slow',
      e2eArgs: ['--x=1'],
    });
  });
});
