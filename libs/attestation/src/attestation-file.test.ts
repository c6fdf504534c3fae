import { describe, expect, it } from 'vitest';
import { attestationFileToJson, parseAttestationFile, parseMeasurements } from './measurements.js';

const MEASUREMENTS = {
  '4': { expected: 'ab'.repeat(32), warnOnly: false },
  '15': { expected: '00'.repeat(32), warnOnly: false },
};

describe('the attestation file: measurements and the policy on boot events', () => {
  it('reads an event policy beside the measurements, and writes the same file back', () => {
    const text = JSON.stringify({ measurements: MEASUREMENTS, eventPolicy: { secureBoot: 'enabled' } });
    const file = parseAttestationFile(text, 'attestationConfig');
    expect(file.eventPolicy).toEqual({ secureBoot: 'enabled' });
    expect(JSON.stringify(attestationFileToJson(file.measurements, file.eventPolicy))).toBe(text);
    expect(parseAttestationFile(JSON.stringify({ measurements: MEASUREMENTS })).eventPolicy).toBeUndefined();
  });

  it('refuses a bad rule naming it, and keeps the measurement-set rule', () => {
    expect(() =>
      parseAttestationFile(JSON.stringify({ measurements: MEASUREMENTS, eventPolicy: { secureBoot: 'on' } }), 'f'),
    ).toThrow('f: eventPolicy.secureBoot: expected "enabled" (or leave the rule out)');
    expect(() =>
      parseAttestationFile(
        JSON.stringify({ measurements: { '15': MEASUREMENTS['15'] }, eventPolicy: { secureBoot: 'enabled' } }),
        'f',
      ),
    ).toThrow('f: the measurements enforce no boot measurement (only PCR 15)');
  });

  it('is refused where only measurements are read: a policy is never parsed and then ignored', () => {
    expect(() =>
      parseMeasurements(JSON.stringify({ measurements: MEASUREMENTS, eventPolicy: { secureBoot: 'enabled' } }), 'm'),
    ).toThrow(/^m: .*eventPolicy/);
  });
});
