import { EventLogError } from './errors.js';
import { EVENT_TYPES, eventTypeName } from './event-types.js';
import { algorithmIdText, bankById } from './hash-banks.js';
import type { BankName } from './hash-banks.js';

/** The highest PCR index of a PC Client TPM (24 PCRs). */
export const MAX_PCR_INDEX = 23;

/** Bounds every parse obeys unless the caller sets others. */
export const EVENT_LOG_LIMITS = {
  /** Largest log accepted (bytes). Real firmware logs are 10-100 KiB. */
  maxBytes: 1024 * 1024,
  /** Most events accepted. Real logs have tens to a few hundred. */
  maxEvents: 10_000,
  /** Most digest algorithms a Spec ID header may list. */
  maxAlgorithms: 8,
} as const;

export interface ParseEventLogOptions {
  /** Refuse logs larger than this many bytes (default EVENT_LOG_LIMITS.maxBytes). */
  maxBytes?: number;
  /** Refuse logs with more events than this (default EVENT_LOG_LIMITS.maxEvents). */
  maxEvents?: number;
}

/** "crypto-agile": Spec ID Event03 header, then TCG_PCR_EVENT2; "sha1": TCG_PCClientPCREvent only. */
export type EventLogFormat = 'crypto-agile' | 'sha1';

/** One digest algorithm a crypto-agile log carries, as its Spec ID header lists it. */
export interface LogAlgorithm {
  readonly bank: BankName;
  /** TPM_ALG_ID. */
  readonly id: number;
  readonly digestSize: number;
}

/** TCG_EfiSpecIDEvent: the first event of a crypto-agile log. */
export interface SpecIdHeader {
  readonly platformClass: number;
  readonly specVersionMajor: number;
  readonly specVersionMinor: number;
  readonly specErrata: number;
  readonly uintnSize: number;
  readonly algorithms: readonly LogAlgorithm[];
  readonly vendorInfo: Buffer;
}

/** One event of the log. Only `digests` are bound to the PCR by the TPM; `data` is untrusted. */
export interface LogEvent {
  /** Position in the log; 0 is the first event (the Spec ID header in crypto-agile logs). */
  readonly index: number;
  /** Byte offset of the event in the log. */
  readonly offset: number;
  readonly pcr: number;
  /** The event type's number; `typeName` is its specification name. */
  readonly type: number;
  readonly typeName: string;
  /** The digest per bank that was extended into the PCR (for EV_NO_ACTION: nothing was extended). */
  readonly digests: ReadonlyMap<BankName, Buffer>;
  /** The event data as the log states it. Untrusted: the TPM binds only the digests. */
  readonly data: Buffer;
}

/** A parsed event log. */
export interface EventLog {
  readonly format: EventLogFormat;
  /** The Spec ID header (crypto-agile logs only). */
  readonly specId: SpecIdHeader | undefined;
  /** The banks every event has a digest for, in header order. */
  readonly banks: readonly BankName[];
  /** Every event, the header and EV_NO_ACTION events included. */
  readonly events: readonly LogEvent[];
  /** Locality from an EV_NO_ACTION "StartupLocality" event: PCR 0's initial value ends in it. */
  readonly startupLocality: number | undefined;
  readonly byteLength: number;
}

const SPEC_ID_03 = Buffer.from('Spec ID Event03\0', 'latin1');
const STARTUP_LOCALITY = Buffer.from('StartupLocality\0', 'latin1');
/** Localities a StartupLocality event may name: 0, 3 (the usual S-CRTM ones) and 4 (H-CRTM). */
const STARTUP_LOCALITIES: readonly number[] = [0, 3, 4];
const SHA1_DIGEST_SIZE = 20;

/** Reads little-endian fields; every read names what it reads, so truncation is precise. */
class FieldReader {
  offset = 0;
  eventIndex: number | undefined = undefined;

  /** `base`: offset of `bytes` in the log; `context`: what is being read, for messages. */
  constructor(
    private readonly bytes: Buffer,
    private readonly base = 0,
    private readonly context = '',
  ) {}

  get left(): number {
    return this.bytes.length - this.offset;
  }

  fail(problem: string, at = this.offset): never {
    throw new EventLogError({ offset: this.base + at, eventIndex: this.eventIndex }, `${this.context}${problem}`);
  }

  private need(size: number, what: string): number {
    if (size > this.left) {
      this.fail(`truncated: ${what} needs ${size} byte${size === 1 ? '' : 's'}, ${this.left} left in the log`);
    }
    const at = this.offset;
    this.offset += size;
    return at;
  }

  u8(what: string): number {
    return this.bytes.readUInt8(this.need(1, what));
  }

  u16(what: string): number {
    return this.bytes.readUInt16LE(this.need(2, what));
  }

  u32(what: string): number {
    return this.bytes.readUInt32LE(this.need(4, what));
  }

  bytesOf(size: number, what: string): Buffer {
    const at = this.need(size, what);
    return Buffer.from(this.bytes.subarray(at, at + size));
  }

  /** An event's data: its size field first, refused when it claims more than the log holds. */
  sizedData(what: string): Buffer {
    const sizeAt = this.offset;
    const size = this.u32(`${what} size`);
    if (size > this.left) {
      this.fail(`${what} size ${size} is larger than the ${this.left} bytes left in the log`, sizeAt);
    }
    return this.bytesOf(size, what);
  }
}

/**
 * Parses a TCG PC Client event log (the bytes of `binary_bios_measurements`), crypto-agile or
 * SHA-1 format, within `options`' bounds. Throws EventLogError, naming offset, event and what was
 * expected, for anything that is not a well-formed log; never anything else.
 */
export function parseEventLog(input: Uint8Array, options: ParseEventLogOptions = {}): EventLog {
  const maxBytes = options.maxBytes ?? EVENT_LOG_LIMITS.maxBytes;
  const maxEvents = options.maxEvents ?? EVENT_LOG_LIMITS.maxEvents;
  if (input.length > maxBytes) {
    throw new EventLogError(
      { offset: 0, eventIndex: undefined },
      `the log is ${input.length} bytes, more than the limit of ${maxBytes}`,
    );
  }
  const bytes = Buffer.from(input.buffer, input.byteOffset, input.length);
  const reader: FieldReader = new FieldReader(bytes);
  if (bytes.length === 0) reader.fail('the log is empty: expected at least one event');

  const events: LogEvent[] = [];
  reader.eventIndex = 0;
  const first = readSha1Event(reader, 0);
  const specId = first.type === EVENT_TYPES.EV_NO_ACTION && first.pcr === 0 ? parseSpecId(first) : undefined;
  events.push(first);
  const algorithms: readonly LogAlgorithm[] = specId?.algorithms ?? [
    { bank: 'sha1', id: 0x0004, digestSize: SHA1_DIGEST_SIZE },
  ];
  const state: ReplayPreconditions = { startupLocality: undefined, pcr0Extended: false };
  checkEvent(reader, first, state);

  while (reader.left > 0) {
    const index = events.length;
    if (index >= maxEvents) {
      reader.eventIndex = index;
      reader.fail(`more than ${maxEvents} events (the limit)`);
    }
    reader.eventIndex = index;
    const event = specId === undefined ? readSha1Event(reader, index) : readEvent2(reader, index, algorithms);
    checkEvent(reader, event, state);
    events.push(event);
  }
  return {
    format: specId === undefined ? 'sha1' : 'crypto-agile',
    specId,
    banks: algorithms.map((a) => a.bank),
    events,
    startupLocality: state.startupLocality,
    byteLength: bytes.length,
  };
}

function checkPcrIndex(reader: FieldReader, pcr: number, at: number): void {
  if (pcr > MAX_PCR_INDEX) reader.fail(`PCR index ${pcr} is out of range (0 to ${MAX_PCR_INDEX})`, at);
}

/** TCG_PCClientPCREvent: PCR index, type, a SHA-1 digest, the data. */
function readSha1Event(reader: FieldReader, index: number): LogEvent {
  const offset = reader.offset;
  const pcr = reader.u32('the PCR index');
  checkPcrIndex(reader, pcr, offset);
  const type = reader.u32('the event type');
  const digest = reader.bytesOf(SHA1_DIGEST_SIZE, 'the SHA-1 digest');
  const data = reader.sizedData('event data');
  return { index, offset, pcr, type, typeName: eventTypeName(type), digests: new Map([['sha1', digest]]), data };
}

/** TCG_PCR_EVENT2: PCR index, type, one digest per header algorithm, the data. */
function readEvent2(reader: FieldReader, index: number, algorithms: readonly LogAlgorithm[]): LogEvent {
  const offset = reader.offset;
  const pcr = reader.u32('the PCR index');
  checkPcrIndex(reader, pcr, offset);
  const type = reader.u32('the event type');
  const countAt = reader.offset;
  const count = reader.u32('the digest count');
  if (count !== algorithms.length) {
    reader.fail(
      `digest count ${count} does not match the ${algorithms.length} algorithm${algorithms.length === 1 ? '' : 's'} of the Spec ID header (${algorithms.map((a) => a.bank).join(', ')})`,
      countAt,
    );
  }
  const digests = new Map<BankName, Buffer>();
  for (let i = 0; i < count; i++) {
    const algAt = reader.offset;
    const id = reader.u16(`the algorithm ID of digest ${i}`);
    const algorithm = algorithms.find((a) => a.id === id);
    if (algorithm === undefined) {
      reader.fail(
        `digest algorithm ${algorithmIdText(id)} is not listed in the Spec ID header (${algorithms.map((a) => `${a.bank} ${algorithmIdText(a.id)}`).join(', ')})`,
        algAt,
      );
    }
    if (digests.has(algorithm.bank)) reader.fail(`a second ${algorithm.bank} digest in one event`, algAt);
    digests.set(algorithm.bank, reader.bytesOf(algorithm.digestSize, `the ${algorithm.bank} digest`));
  }
  const data = reader.sizedData('event data');
  return { index, offset, pcr, type, typeName: eventTypeName(type), digests, data };
}

/** TCG_EfiSpecIDEvent, when the first event's data starts with "Spec ID Event03". */
function parseSpecId(first: LogEvent): SpecIdHeader | undefined {
  if (!first.data.subarray(0, SPEC_ID_03.length).equals(SPEC_ID_03)) return undefined;
  // The data follows PCR index, type, SHA-1 digest and size: 32 bytes into the event.
  const reader: FieldReader = new FieldReader(first.data, first.offset + 32, 'Spec ID header: ');
  reader.eventIndex = 0;
  reader.offset = SPEC_ID_03.length;
  const platformClass = reader.u32('platformClass');
  const specVersionMinor = reader.u8('specVersionMinor');
  const specVersionMajor = reader.u8('specVersionMajor');
  const specErrata = reader.u8('specErrata');
  const uintnSize = reader.u8('uintnSize');
  if (specVersionMajor !== 2) reader.fail(`specVersionMajor ${specVersionMajor}, expected 2`);
  if (uintnSize !== 1 && uintnSize !== 2) reader.fail(`uintnSize ${uintnSize}, expected 1 or 2`);
  const count = reader.u32('numberOfAlgorithms');
  if (count < 1 || count > EVENT_LOG_LIMITS.maxAlgorithms) {
    reader.fail(`numberOfAlgorithms ${count}, expected 1 to ${EVENT_LOG_LIMITS.maxAlgorithms}`);
  }
  const algorithms: LogAlgorithm[] = [];
  for (let i = 0; i < count; i++) {
    const id = reader.u16(`the algorithm ID of entry ${i}`);
    const digestSize = reader.u16(`the digest size of entry ${i}`);
    const bank = bankById(id);
    if (bank === undefined) {
      reader.fail(
        `unknown digest algorithm ${algorithmIdText(id)} (entry ${i}): this reader replays sha1, sha256, sha384, sha512`,
      );
    }
    if (digestSize !== bank.digestSize) {
      reader.fail(`digest size ${digestSize} for ${bank.name} (entry ${i}), expected ${bank.digestSize}`);
    }
    if (algorithms.some((a) => a.id === id)) reader.fail(`${bank.name} listed twice`);
    algorithms.push({ bank: bank.name, id, digestSize });
  }
  const vendorInfoSize = reader.u8('vendorInfoSize');
  const vendorInfo = reader.bytesOf(vendorInfoSize, 'vendorInfo');
  if (reader.left !== 0) reader.fail(`${reader.left} bytes after vendorInfo, expected none`);
  return { platformClass, specVersionMajor, specVersionMinor, specErrata, uintnSize, algorithms, vendorInfo };
}

interface ReplayPreconditions {
  startupLocality: number | undefined;
  pcr0Extended: boolean;
}

/** The rules replay relies on: well-formed separators, one StartupLocality before PCR 0 moves. */
function checkEvent(reader: FieldReader, event: LogEvent, state: ReplayPreconditions): void {
  if (event.type === EVENT_TYPES.EV_SEPARATOR) {
    const value = event.data.length === 4 ? event.data.readUInt32LE(0) : undefined;
    if (value !== 0 && value !== 0xffffffff) {
      reader.fail(
        `EV_SEPARATOR data must be 00000000 or ffffffff, got ${event.data.length} byte${event.data.length === 1 ? '' : 's'} ${event.data.subarray(0, 16).toString('hex')}${event.data.length > 16 ? '…' : ''}`,
        event.offset,
      );
    }
  }
  if (event.type === EVENT_TYPES.EV_NO_ACTION) {
    if (event.data.subarray(0, STARTUP_LOCALITY.length).equals(STARTUP_LOCALITY)) {
      if (event.pcr !== 0) reader.fail(`StartupLocality event for PCR ${event.pcr}, expected PCR 0`, event.offset);
      if (event.data.length !== STARTUP_LOCALITY.length + 1) {
        reader.fail(
          `StartupLocality event data is ${event.data.length} bytes, expected ${STARTUP_LOCALITY.length + 1}`,
          event.offset,
        );
      }
      if (state.startupLocality !== undefined) reader.fail('a second StartupLocality event', event.offset);
      if (state.pcr0Extended) reader.fail('StartupLocality event after PCR 0 was extended', event.offset);
      const locality = event.data[STARTUP_LOCALITY.length] ?? 0;
      if (!STARTUP_LOCALITIES.includes(locality)) {
        reader.fail(`StartupLocality ${locality}, expected one of ${STARTUP_LOCALITIES.join(', ')}`, event.offset);
      }
      state.startupLocality = locality;
    }
    return;
  }
  if (event.pcr === 0) state.pcr0Extended = true;
}
