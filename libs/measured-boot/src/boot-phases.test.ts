import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BOOT_PHASES, extendBootPhases } from './boot-phases.js';
import { predictedPcr } from './predicted-pcr.js';

const sha256 = (data: Uint8Array): Buffer => createHash('sha256').update(data).digest();

describe('extendBootPhases', () => {
  const stubEvent = {
    pcr: 11,
    type: 'EV_IPL' as const,
    digest: sha256(Buffer.from('.linux\0')),
    eventData: null,
    measuredBy: 'systemd-stub' as const,
    description: 'systemd-stub: section name .linux',
  };
  const afterStub = predictedPcr(11, [stubEvent]);

  it('extends SHA-256 of each word (UTF-8, no NUL) after the stub’s events, with no firmware event type', () => {
    const extended = extendBootPhases(afterStub, BOOT_PHASES.slice(0, 2));
    expect(extended.events[0]).toBe(stubEvent);
    expect(extended.events.slice(1).map((e) => [e.type, e.measuredBy, e.digest.toString('hex')])).toEqual([
      [null, 'systemd-pcrphase', sha256(Buffer.from('enter-initrd')).toString('hex')],
      [null, 'systemd-pcrphase', sha256(Buffer.from('leave-initrd')).toString('hex')],
    ]);
    let value = afterStub.value;
    for (const word of ['enter-initrd', 'leave-initrd']) {
      value = createHash('sha256')
        .update(value)
        .update(sha256(Buffer.from(word)))
        .digest();
    }
    expect(extended.value).toEqual(value);
    expect(extendBootPhases(afterStub, [])).toEqual(afterStub);
  });

  it('refuses words systemd-pcrphase would not measure', () => {
    expect(() => extendBootPhases(afterStub, [''])).toThrow(RangeError);
    expect(() => extendBootPhases(afterStub, ['ready\0'])).toThrow(/without NUL/);
  });
});
