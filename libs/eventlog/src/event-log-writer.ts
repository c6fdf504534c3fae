import { EVENT_TYPES } from './event-types.js';
import type { EventTypeName } from './event-types.js';
import { bankDigest, bankInfo } from './hash-banks.js';
import type { BankName } from './hash-banks.js';
import { EVENT_LOG_LIMITS, MAX_PCR_INDEX } from './parse-event-log.js';

export interface EventLogWriterOptions {
  /** The PCR banks every event carries a digest for, in the order the header lists them. */
  readonly banks: readonly BankName[];
  /** Writes an EV_NO_ACTION "StartupLocality" event: PCR 0 then starts at this locality. */
  readonly startupLocality?: 0 | 3 | 4;
  /** The written log stays within these, so that parseEventLog with the same limits reads it. */
  readonly maxBytes?: number;
  readonly maxEvents?: number;
}

/** One event to write. Without `digests`, each bank's digest is the hash of `data`. */
export interface EventToWrite {
  readonly pcr: number;
  readonly type: EventTypeName | number;
  readonly data: Uint8Array;
  /** The digest per bank, for events whose digest is not the hash of their data (images). */
  readonly digests?: Partial<Record<BankName, Uint8Array>>;
}

/** What was logged, and what to extend into the TPM in step: `tpm.pcrExtend(pcr, digests)`. */
export interface WrittenEvent {
  readonly index: number;
  readonly pcr: number;
  /** Empty for EV_NO_ACTION: nothing to extend. */
  readonly digests: readonly { hash: BankName; digest: Buffer }[];
}

const SPEC_ID_SIGNATURE = Buffer.from('Spec ID Event03\0', 'latin1');
const STARTUP_LOCALITY = Buffer.from('StartupLocality\0', 'latin1');

/**
 * Writes a crypto-agile TCG event log (Spec ID Event03 header, then TCG_PCR_EVENT2 events), one
 * event at a time, so that a measured boot can log each extend as it makes it.
 */
export class EventLogWriter {
  private readonly parts: Buffer[] = [];
  private size = 0;
  private count = 0;
  private readonly banks: readonly BankName[];
  private readonly maxBytes: number;
  private readonly maxEvents: number;
  private pcr0Extended = false;

  constructor(options: EventLogWriterOptions) {
    if (options.banks.length === 0) throw new RangeError('an event log needs at least one bank');
    if (new Set(options.banks).size !== options.banks.length) throw new RangeError('a bank is listed twice');
    if (options.banks.length > EVENT_LOG_LIMITS.maxAlgorithms) {
      throw new RangeError(`at most ${EVENT_LOG_LIMITS.maxAlgorithms} banks`);
    }
    this.banks = [...options.banks];
    this.maxBytes = options.maxBytes ?? EVENT_LOG_LIMITS.maxBytes;
    this.maxEvents = options.maxEvents ?? EVENT_LOG_LIMITS.maxEvents;
    this.push(this.specIdEvent());
    if (options.startupLocality !== undefined) {
      this.append({
        pcr: 0,
        type: 'EV_NO_ACTION',
        data: Buffer.concat([STARTUP_LOCALITY, Buffer.from([options.startupLocality])]),
      });
    }
  }

  /** Events written so far, the header included. */
  get eventCount(): number {
    return this.count;
  }

  get byteLength(): number {
    return this.size;
  }

  /**
   * Appends one event and returns the digests to extend into its PCR. Refuses (RangeError) what
   * a reader would refuse: a PCR out of range, a digest of the wrong size or for a bank the log
   * does not have, a malformed separator, a second StartupLocality, a log over its limits.
   */
  append(event: EventToWrite): WrittenEvent {
    if (!Number.isInteger(event.pcr) || event.pcr < 0 || event.pcr > MAX_PCR_INDEX) {
      throw new RangeError(`PCR index ${event.pcr} is out of range (0 to ${MAX_PCR_INDEX})`);
    }
    const type = typeof event.type === 'number' ? event.type : EVENT_TYPES[event.type];
    if (!Number.isInteger(type) || type < 0 || type > 0xffffffff)
      throw new RangeError(`event type ${type} is not a u32`);
    const data = Buffer.from(event.data);
    if (type === EVENT_TYPES.EV_SEPARATOR && !(data.length === 4 && [0, 0xffffffff].includes(data.readUInt32LE(0)))) {
      throw new RangeError('EV_SEPARATOR data must be 00000000 or ffffffff');
    }
    const noAction = type === EVENT_TYPES.EV_NO_ACTION;
    if (noAction && data.subarray(0, STARTUP_LOCALITY.length).equals(STARTUP_LOCALITY) && this.count !== 1) {
      throw new RangeError('a StartupLocality event must directly follow the header (use the startupLocality option)');
    }
    for (const bank of Object.keys(event.digests ?? {})) {
      if (!this.banks.includes(bank as BankName))
        throw new RangeError(`a digest for ${bank}, a bank this log does not have`);
    }
    const digests = this.banks.map((bank) => {
      const given = event.digests?.[bank];
      // EV_NO_ACTION events extend nothing; their digests are zero by the specification.
      const digest =
        given === undefined
          ? noAction
            ? Buffer.alloc(bankInfo(bank).digestSize)
            : bankDigest(bank, data)
          : Buffer.from(given);
      if (digest.length !== bankInfo(bank).digestSize) {
        throw new RangeError(`the ${bank} digest is ${digest.length} bytes, expected ${bankInfo(bank).digestSize}`);
      }
      return { hash: bank, digest };
    });
    const header = Buffer.alloc(12);
    header.writeUInt32LE(event.pcr, 0);
    header.writeUInt32LE(type, 4);
    header.writeUInt32LE(digests.length, 8);
    const digestBytes = digests.map(({ hash, digest }) => {
      const id = Buffer.alloc(2);
      id.writeUInt16LE(bankInfo(hash).id, 0);
      return Buffer.concat([id, digest]);
    });
    const size = Buffer.alloc(4);
    size.writeUInt32LE(data.length, 0);
    const index = this.count;
    this.push(Buffer.concat([header, ...digestBytes, size, data]));
    if (!noAction && event.pcr === 0) this.pcr0Extended = true;
    return { index, pcr: event.pcr, digests: noAction ? [] : digests };
  }

  /** Whether PCR 0 has been extended (a StartupLocality event can no longer be written). */
  get extendedPcr0(): boolean {
    return this.pcr0Extended;
  }

  /** The log so far, as `binary_bios_measurements` holds it. */
  bytes(): Buffer {
    return Buffer.concat(this.parts, this.size);
  }

  private push(bytes: Buffer): void {
    if (this.count >= this.maxEvents)
      throw new RangeError(`the log already holds ${this.maxEvents} events (the limit)`);
    if (this.size + bytes.length > this.maxBytes) {
      throw new RangeError(
        `the event would make the log ${this.size + bytes.length} bytes, more than the limit of ${this.maxBytes}`,
      );
    }
    this.parts.push(bytes);
    this.size += bytes.length;
    this.count++;
  }

  /** The SHA-1-format first event carrying TCG_EfiSpecIDEvent. */
  private specIdEvent(): Buffer {
    const fixed = Buffer.alloc(8);
    fixed.writeUInt32LE(0, 0); // platformClass: client
    fixed.writeUInt8(0, 4); // specVersionMinor
    fixed.writeUInt8(2, 5); // specVersionMajor
    fixed.writeUInt8(0, 6); // specErrata
    fixed.writeUInt8(2, 7); // uintnSize: 64-bit
    const count = Buffer.alloc(4);
    count.writeUInt32LE(this.banks.length, 0);
    const sizes = this.banks.map((bank) => {
      const entry = Buffer.alloc(4);
      entry.writeUInt16LE(bankInfo(bank).id, 0);
      entry.writeUInt16LE(bankInfo(bank).digestSize, 2);
      return entry;
    });
    const data = Buffer.concat([SPEC_ID_SIGNATURE, fixed, count, ...sizes, Buffer.from([0])]);
    const header = Buffer.alloc(32);
    header.writeUInt32LE(0, 0);
    header.writeUInt32LE(EVENT_TYPES.EV_NO_ACTION, 4);
    // bytes 8-27: the all-zero SHA-1 digest
    header.writeUInt32LE(data.length, 28);
    return Buffer.concat([header, data]);
  }
}
