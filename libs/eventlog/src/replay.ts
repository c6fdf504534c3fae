import { EVENT_TYPES } from './event-types.js';
import { bankDigest, bankInfo } from './hash-banks.js';
import type { BankName } from './hash-banks.js';
import type { EventLog, LogEvent } from './parse-event-log.js';

/** Replayed PCR values: bank -> PCR index -> value, PCRs in ascending order. */
export type PcrBanks = ReadonlyMap<BankName, ReadonlyMap<number, Buffer>>;

/**
 * A PCR's value after TPM2_Startup: PCR 0 ends in the startup locality (0 unless a StartupLocality
 * event says 3 or 4), PCRs 17-22 (dynamic root of trust) are all ones, the rest zero.
 */
export function initialPcrValue(bank: BankName, pcr: number, startupLocality = 0): Buffer {
  const size = bankInfo(bank).digestSize;
  if (pcr >= 17 && pcr <= 22) return Buffer.alloc(size, 0xff);
  const value = Buffer.alloc(size);
  if (pcr === 0) value[size - 1] = startupLocality;
  return value;
}

/** Whether an event extended its PCR (EV_NO_ACTION events are informational only). */
export function extendsPcr(event: LogEvent): boolean {
  return event.type !== EVENT_TYPES.EV_NO_ACTION;
}

/**
 * Replays the log as the TPM computed it: for each bank, every event but EV_NO_ACTION extends its
 * PCR with its digest (new = H(old || digest)). Lists only the PCRs some event extended.
 */
export function replayEventLog(log: EventLog): PcrBanks {
  const out = new Map<BankName, Map<number, Buffer>>();
  for (const bank of log.banks) {
    const values = new Map<number, Buffer>();
    for (const event of log.events) {
      if (!extendsPcr(event)) continue;
      const digest = event.digests.get(bank);
      // The parser gives every event a digest per bank; a hand-built log might not.
      if (digest === undefined) throw new RangeError(`event ${event.index} has no ${bank} digest`);
      const current = values.get(event.pcr) ?? initialPcrValue(bank, event.pcr, log.startupLocality);
      values.set(event.pcr, bankDigest(bank, current, digest));
    }
    out.set(bank, new Map([...values].sort(([a], [b]) => a - b)));
  }
  return out;
}

/** The events that extended `pcr`, in log order: what explains its value. */
export function eventsForPcr(log: EventLog, pcr: number): LogEvent[] {
  return log.events.filter((e) => e.pcr === pcr && extendsPcr(e));
}

/** `{"sha256": {"0": "<hex>", ...}}`: bank names lower case, PCR indexes decimal, lower-case hex. */
export function pcrBanksToJson(banks: PcrBanks): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const [bank, values] of banks) {
    out[bank] = Object.fromEntries([...values].map(([pcr, value]) => [String(pcr), value.toString('hex')]));
  }
  return out;
}
