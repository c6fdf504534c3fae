import { parseEventLog } from './parse-event-log.js';
import type { EventLog, ParseEventLogOptions } from './parse-event-log.js';

/**
 * One log from a boot log and a log of what ran later (the bootstrapper's runtime log): the boot
 * log's bytes, then the later log's events without its Spec ID header. The later log must be a
 * crypto-agile log of exactly the same digest algorithms, in the same order, without a
 * StartupLocality event (it continues PCRs, it does not start them): otherwise its events would
 * not be events of the boot log's format. The result is a log that parseEventLog reads and whose
 * replay is the boot log's replay continued with the later events, exactly as the TPM extended
 * them. Throws RangeError naming what differs; EventLogError when either log does not parse.
 */
export function appendEventLog(
  boot: Uint8Array,
  later: Uint8Array,
  limits: ParseEventLogOptions = {},
): { bytes: Buffer; log: EventLog } {
  const first = parseEventLog(boot, limits);
  const second = parseEventLog(later, limits);
  if (first.format !== 'crypto-agile') {
    throw new RangeError('the boot log is in the SHA-1 format: crypto-agile events cannot be appended to it');
  }
  if (second.format !== 'crypto-agile') throw new RangeError('the appended log is not crypto-agile');
  const algorithms = (log: EventLog): string =>
    (log.specId?.algorithms ?? []).map((a) => `${a.bank}(${a.digestSize})`).join(',');
  if (algorithms(first) !== algorithms(second)) {
    throw new RangeError(
      `the appended log's banks (${algorithms(second)}) are not the boot log's (${algorithms(first)})`,
    );
  }
  if (second.startupLocality !== undefined) {
    throw new RangeError('the appended log has a StartupLocality event: only the boot log may start PCR 0');
  }
  // Event 0 is the Spec ID header; the appended events start where event 1 starts.
  const start = second.events[1]?.offset ?? second.byteLength;
  const bytes = Buffer.concat([Buffer.from(boot), Buffer.from(later).subarray(start)]);
  return { bytes, log: parseEventLog(bytes, limits) };
}
