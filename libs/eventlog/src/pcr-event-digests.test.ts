import { describe, expect, it } from 'vitest';
import { cString, filePathDevicePath, imageLoadEventData } from './event-data-builders.js';
import { checkEventPolicy, parseEventPolicy } from './event-policy.js';
import { EventLogWriter } from './event-log-writer.js';
import { bankDigest } from './hash-banks.js';
import { parseEventLog } from './parse-event-log.js';

const KERNEL = bankDigest('sha256', Buffer.from('kernel'));
const BOOTSTRAPPER = bankDigest('sha256', Buffer.from('bootstrapper'));

/** mini's measured boot as a log: the kernel in PCR 4, the bootstrapper in PCR 9 (labels are untrusted). */
function boot(bootstrapper: Buffer, label = 'bootstrapper bundle') {
  const writer = new EventLogWriter({ banks: ['sha256'] });
  writer.append({
    pcr: 4,
    type: 'EV_EFI_BOOT_SERVICES_APPLICATION',
    data: imageLoadEventData({ length: 0, devicePath: filePathDevicePath('\\kernel') }),
    digests: { sha256: KERNEL },
  });
  writer.append({ pcr: 9, type: 'EV_IPL', data: cString(label), digests: { sha256: bootstrapper } });
  return parseEventLog(writer.bytes());
}

describe('allowed digests per PCR (our own measurements: kernel, bootstrapper)', () => {
  const policy = { pcrEventDigests: { '9': [BOOTSTRAPPER.toString('hex')] } };

  it('passes the known bootstrapper and names the event of another one', () => {
    expect(checkEventPolicy(boot(BOOTSTRAPPER), policy)).toEqual([]);
    const other = bankDigest('sha256', Buffer.from('patched bootstrapper'));
    const violations = checkEventPolicy(boot(other), policy);
    expect(violations.map((v) => [v.rule, v.event?.index, v.message])).toEqual([
      ['pcrEventDigests', 2, `EV_IPL digest sha256:${other.toString('hex')} is not allowed in PCR 9 (event 2, PCR 9)`],
    ]);
  });

  it('is not fooled by a relabelled event: every event of the PCR counts, whatever it says it is', () => {
    const other = bankDigest('sha256', Buffer.from('patched bootstrapper'));
    expect(checkEventPolicy(boot(other, 'initrd'), policy).map((v) => v.event?.index)).toEqual([2]);
  });

  it('refuses a log without an event in the PCR', () => {
    expect(checkEventPolicy(boot(BOOTSTRAPPER), { pcrEventDigests: { '12': ['ab'.repeat(32)] } })).toEqual([
      { rule: 'pcrEventDigests', event: undefined, message: 'the log shows no event in PCR 12' },
    ]);
  });

  it('reads the rule from a file, naming a bad field', () => {
    expect(parseEventPolicy({ pcrEventDigests: { '9': ['ab'.repeat(32)] } })).toEqual({
      pcrEventDigests: { '9': ['ab'.repeat(32)] },
    });
    expect(() => parseEventPolicy({ pcrEventDigests: { '24': ['ab'.repeat(32)] } })).toThrow(
      'eventPolicy.pcrEventDigests.24: expected a PCR index from 0 to 23',
    );
    expect(() => parseEventPolicy({ pcrEventDigests: { '9': [] } })).toThrow(
      'eventPolicy.pcrEventDigests.9: expected a non-empty list of 64 lower-case hex characters',
    );
    expect(() => parseEventPolicy({ pcrEventDigests: {} })).toThrow(
      'eventPolicy.pcrEventDigests: expected at least one PCR',
    );
    expect(() => parseEventPolicy({ pcrEventDigest: {} })).toThrow(
      'eventPolicy.pcrEventDigest: unknown rule (known: secureBoot, kernelCommandLines, bootApplications, pcrEventDigests)',
    );
  });
});
