import type { BootComponent } from '@constellation/attestation';
import { predictUkiBoot } from './predict-pcrs.js';
import type { PredictUkiBootOptions } from './predict-pcrs.js';
import type { ExpectedEvent } from './predicted-pcr.js';

/**
 * The predicted extends of PCRs 4, 9 and 11 (IMAGE_PCRS) of booting this UKI, as components a
 * stand-in firmware measures and logs: a node that boots none of it (mini's namespace nodes) then
 * shows the PCR values and event log entries of one that boots the image, so that one set of
 * measurements and one event policy fit both.
 *
 * In the order a real boot extends them: the firmware's PCR 4 events up to loading the UKI, then
 * systemd-stub's PCR 11 sections (measured before it loads the kernel), then the firmware's PCR 4
 * event of the kernel it loads, then the kernel EFI stub's PCR 9 events. Only the per-PCR order
 * decides the values; the rest makes the log read like a real one.
 */
export function imageBootComponents(uki: Uint8Array, options: PredictUkiBootOptions = {}): BootComponent[] {
  const prediction = predictUkiBoot(uki, options);
  const pcr4 = prediction.pcrs[4].events;
  const firstImage = pcr4.findIndex((e) => e.type === 'EV_EFI_BOOT_SERVICES_APPLICATION');
  const beforeStub = firstImage === -1 ? pcr4.length : firstImage + 1;
  return [
    ...pcr4.slice(0, beforeStub),
    ...prediction.pcrs[11].events,
    ...pcr4.slice(beforeStub),
    ...prediction.pcrs[9].events,
  ].flatMap(component);
}

function component(event: ExpectedEvent): BootComponent[] {
  // A null type is an extend without an event log entry (systemd-pcrphase's, made by the booted
  // system, not by firmware): skipped, as a stand-in firmware has no entry to log for it.
  // predictUkiBoot stops before those, so none are skipped today.
  if (event.type === null) return [];
  return [
    {
      pcr: event.pcr,
      description: event.description,
      digest: event.digest,
      // Null where the image does not fix the data (load addresses, the kernel's tagged-event layout).
      event: { type: event.type, data: event.eventData ?? Buffer.alloc(0) },
    },
  ];
}
