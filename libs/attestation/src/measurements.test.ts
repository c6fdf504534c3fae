import { describe, expect, it } from 'vitest';
import { AttestationConfigError } from './errors.js';
import { measurementsToFile, parseMeasurements } from './measurements.js';

const A = 'a'.repeat(64);
const B = '0b'.repeat(32);
const ZERO = '0'.repeat(64);

describe('parseMeasurements', () => {
  it('reads JSON and YAML into the same measurements, sorted by PCR', () => {
    const json = parseMeasurements(
      JSON.stringify({
        measurements: { '15': { expected: ZERO }, '9': { expected: B }, '4': { expected: A, warnOnly: true } },
      }),
    );
    const yaml = parseMeasurements(
      `measurements:\n  4:\n    expected: "${A}"\n    warnOnly: true\n  9:\n    expected: "${B}"\n  15:\n    expected: "${ZERO}"\n`,
    );
    expect(yaml).toEqual(json);
    expect([...json.keys()]).toEqual([4, 9, 15]);
    expect(json.get(4)).toEqual({ expected: Buffer.from(A, 'hex'), warnOnly: true });
    expect(json.get(15)?.warnOnly).toBe(false);
  });

  it('round-trips through the file form', () => {
    const m = parseMeasurements(
      JSON.stringify({ measurements: { '9': { expected: A, warnOnly: false }, '15': { expected: ZERO } } }),
    );
    expect(parseMeasurements(JSON.stringify(measurementsToFile(m)))).toEqual(m);
  });

  it.each([
    [{ measurements: { '24': { expected: A } } }, 'measurements.24: expected a PCR index from 0 to 23'],
    [{ measurements: { '-1': { expected: A } } }, 'measurements.-1: expected a PCR index from 0 to 23'],
    [
      { measurements: { '4': { expected: 'abc' } } },
      'measurements.4.expected: expected 64 hex characters (a SHA-256 PCR value)',
    ],
    [{ measurements: { '4': { expected: A, warnonly: true } } }, 'measurements.4: Unrecognized key: "warnonly"'],
    [
      { measurements: { '4': { expected: A, warnOnly: 'yes' } } },
      'measurements.4.warnOnly: Invalid input: expected boolean, received string',
    ],
    [{ measurement: {} }, 'Unrecognized key'],
    [{}, 'measurements: Invalid input: expected record, received undefined'],
    [[], '(top level): Invalid input: expected object, received array'],
  ])('rejects %j naming the field', (input, message) => {
    expect(() => parseMeasurements(JSON.stringify(input), 'measurements')).toThrow(message);
  });

  // Found on main: an empty file was accepted (and then every document passed), and PCR 15 could
  // be warnOnly. Each rule is refused by name.
  it.each([
    [{ measurements: {} }, 'the measurements must not be empty: an empty set would accept any machine'],
    [{ measurements: { '4': { expected: A } } }, 'PCR 15 must be measured'],
    [{ measurements: { '15': { expected: ZERO, warnOnly: true } } }, 'PCR 15 must be enforced (warnOnly: false)'],
    [
      { measurements: { '15': { expected: B } } },
      'PCR 15 must be expected to be zero: a node that inits or joins has not been marked yet',
    ],
    // Issue 42: the CLI refused these, the JoinService's loader did not.
    [
      { measurements: { '15': { expected: ZERO } } },
      'the measurements enforce no boot measurement (only PCR 15): any software on a genuine TPM would pass',
    ],
    [
      {
        measurements: {
          '4': { expected: A, warnOnly: true },
          '9': { expected: B, warnOnly: true },
          '15': { expected: ZERO },
        },
      },
      'the measurements enforce no boot measurement (PCRs 4, 9 are warnOnly)',
    ],
    // Issue 50, item 4: PCRs 16 and 23 any process resets at locality 0, and nothing in a boot
    // extends 10, 13 or 14: a set enforcing only those admits any boot.
    [
      { measurements: { '23': { expected: ZERO }, '15': { expected: ZERO } } },
      'the measurements enforce no boot measurement (PCR 23 is enforced, but no boot measures it: PCRs 16 and 23 any process resets, and the boot extends none of 10, 13, 14; the boot measures 0-9, 11 and 12)',
    ],
    [
      {
        measurements: {
          '16': { expected: A },
          '10': { expected: B },
          '4': { expected: A, warnOnly: true },
          '15': { expected: ZERO },
        },
      },
      'the measurements enforce no boot measurement (PCRs 10, 16 are enforced, but no boot measures them',
    ],
  ])('refuses the unsafe set %j, naming the rule', (input, message) => {
    expect(() => parseMeasurements(JSON.stringify(input), 'measurements')).toThrow(`measurements: ${message}`);
  });

  it('rejects duplicate keys that JSON.parse would silently merge, and unparsable text', () => {
    expect(() => parseMeasurements(`{"measurements": {"4": {"expected": "${A}"}, "4": {"expected": "${B}"}}}`)).toThrow(
      /not valid JSON or YAML: Map keys must be unique/,
    );
    expect(() => parseMeasurements('measurements: [unclosed')).toThrow(AttestationConfigError);
    expect(() => parseMeasurements('x'.repeat(70_000))).toThrow(/larger than 65536 bytes/);
  });
});
