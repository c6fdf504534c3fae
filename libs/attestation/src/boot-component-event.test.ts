import { cString, filePathDevicePath, imageLoadEventData, separatorData } from '@constellation/eventlog';
import { describe, expect, it } from 'vitest';
import { bootComponentEvent, componentDigest } from './measured-boot.js';

describe('bootComponentEvent', () => {
  const digest = componentDigest('a kernel');

  it('logs a component without its own event as before: an image load in PCR 4, an EV_IPL label elsewhere', () => {
    expect(bootComponentEvent({ pcr: 4, description: 'kernel', digest })).toEqual({
      pcr: 4,
      type: 'EV_EFI_BOOT_SERVICES_APPLICATION',
      data: imageLoadEventData({ length: 0, devicePath: filePathDevicePath('\\kernel') }),
      digests: { sha256: digest },
    });
    expect(bootComponentEvent({ pcr: 9, description: 'bootstrapper', digest })).toEqual({
      pcr: 9,
      type: 'EV_IPL',
      data: cString('bootstrapper'),
      digests: { sha256: digest },
    });
  });

  it("logs a component's own event type and data, with the component's digest", () => {
    const data = separatorData();
    expect(
      bootComponentEvent({ pcr: 4, description: 'separator', digest, event: { type: 'EV_SEPARATOR', data } }),
    ).toEqual({ pcr: 4, type: 'EV_SEPARATOR', data, digests: { sha256: digest } });
  });

  it('refuses an EV_NO_ACTION event, which would be logged but not extended', () => {
    expect(() =>
      bootComponentEvent({
        pcr: 9,
        description: 'nothing',
        digest,
        event: { type: 'EV_NO_ACTION', data: Buffer.alloc(0) },
      }),
    ).toThrow(/EV_NO_ACTION extends nothing/);
  });
});
