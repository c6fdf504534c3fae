import { describe, expect, it } from 'vitest';
import { EventLogError } from './errors.js';
import { EventLogWriter } from './event-log-writer.js';
import { cString, separatorData } from './event-data-builders.js';
import { EVENT_TYPES } from './event-types.js';
import { parseEventLog } from './parse-event-log.js';
import { realLogs } from './testdata.fixture.js';

const logs = await realLogs();
const rhel = logs.find((l) => l.name === 'rhel8-uefi.bin')!.bytes;
const debian = logs.find((l) => l.name === 'debian-10.bin')!.bytes;

/** A small crypto-agile log: header, then events; offsets below are computed from it. */
function smallLog(): Buffer {
  const writer = new EventLogWriter({ banks: ['sha1', 'sha256'] });
  writer.append({ pcr: 4, type: 'EV_EFI_ACTION', data: cString('Calling EFI Application from Boot Option') });
  writer.append({ pcr: 4, type: 'EV_SEPARATOR', data: separatorData() });
  return writer.bytes();
}
// Header event: 32 bytes + the 37-byte Spec ID data (two algorithms).
const FIRST_EVENT2 = 32 + 37;

function refusal(input: Buffer, options?: Parameters<typeof parseEventLog>[1]): EventLogError {
  try {
    parseEventLog(input, options);
  } catch (err) {
    if (err instanceof EventLogError) return err;
    throw err;
  }
  throw new Error('the log was accepted');
}

/** An SHA-1-format event of `dataSize` bytes of data. */
function sha1Event(pcr: number, type: number, data: Buffer): Buffer {
  const header = Buffer.alloc(32);
  header.writeUInt32LE(pcr, 0);
  header.writeUInt32LE(type, 4);
  header.writeUInt32LE(data.length, 28);
  return Buffer.concat([header, data]);
}

describe('hostile event logs are refused with a precise error', () => {
  it('refuses a log over the size limit before reading it', () => {
    const err = refusal(Buffer.alloc(2 * 1024 * 1024));
    expect(err.message).toBe('event log: at offset 0: the log is 2097152 bytes, more than the limit of 1048576');
    expect(refusal(rhel, { maxBytes: 1000 }).message).toContain('the log is 34034 bytes, more than the limit of 1000');
  });

  it('refuses an event that claims 100 MiB of data, naming event, offset and what is left', () => {
    const log = smallLog();
    // The first TCG_PCR_EVENT2: PCR, type, count, 2 digests (2+20, 2+32), then the data size.
    const sizeAt = FIRST_EVENT2 + 12 + 22 + 34;
    log.writeUInt32LE(100 * 1024 * 1024, sizeAt);
    const err = refusal(log);
    expect(err.eventIndex).toBe(1);
    expect(err.offset).toBe(sizeAt);
    expect(err.message).toBe(
      `event log: event 1 at offset ${sizeAt}: event data size 104857600 is larger than the ${log.length - sizeAt - 4} bytes left in the log`,
    );
  });

  it('refuses a million tiny events within bounded time, by the size limit and by the event limit', () => {
    const tiny = sha1Event(0, EVENT_TYPES.EV_POST_CODE, Buffer.alloc(0));
    const million = Buffer.concat(Array.from({ length: 1_000_000 }, () => tiny));
    let started = performance.now();
    expect(refusal(million).message).toContain('the log is 32000000 bytes, more than the limit of 1048576');
    expect(performance.now() - started).toBeLessThan(100);
    // With the size limit lifted, the event limit stops it after 10000 events.
    started = performance.now();
    const err = refusal(million, { maxBytes: 64 * 1024 * 1024 });
    expect(err.message).toBe(`event log: event 10000 at offset ${10_000 * 32}: more than 10000 events (the limit)`);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('refuses every truncation of a real log of both formats, naming what was cut', () => {
    for (const log of [rhel, debian]) {
      const boundaries = new Set(parseEventLog(log).events.map((e) => e.offset));
      // Every cut in the first events, then every 7th byte: each field of each kind is cut somewhere.
      for (let length = 1; length < log.length; length += length < 1024 ? 1 : 7) {
        if (boundaries.has(length)) {
          // Cut between events: a shorter, well-formed log.
          expect(parseEventLog(log.subarray(0, length)).byteLength).toBe(length);
          continue;
        }
        const err = refusal(log.subarray(0, length));
        expect(err.message).toMatch(
          /truncated: .* needs \d+ bytes?, \d+ left in the log|larger than the \d+ bytes left in the log/,
        );
        expect(err.offset).toBeLessThanOrEqual(length);
      }
    }
    expect(refusal(Buffer.alloc(0)).message).toBe(
      'event log: at offset 0: the log is empty: expected at least one event',
    );
    expect(refusal(smallLog().subarray(0, FIRST_EVENT2 + 13)).message).toBe(
      `event log: event 1 at offset ${FIRST_EVENT2 + 12}: truncated: the algorithm ID of digest 0 needs 2 bytes, 1 left in the log`,
    );
    expect(refusal(smallLog().subarray(0, FIRST_EVENT2 + 24)).message).toBe(
      `event log: event 1 at offset ${FIRST_EVENT2 + 14}: truncated: the sha1 digest needs 20 bytes, 10 left in the log`,
    );
  });

  it('refuses an unknown algorithm in the Spec ID header and an algorithm the header does not list', () => {
    const header = smallLog();
    // Spec ID data starts at 32; the algorithm entries after 16+4+4+4 bytes.
    const firstAlgorithm = 32 + 28;
    header.writeUInt16LE(0x0012, firstAlgorithm); // SM3_256
    expect(refusal(header).message).toBe(
      `event log: event 0 at offset ${firstAlgorithm + 4}: Spec ID header: unknown digest algorithm 0x0012 (entry 0): this reader replays sha1, sha256, sha384, sha512`,
    );
    const wrongSize = smallLog();
    wrongSize.writeUInt16LE(32, firstAlgorithm + 2);
    expect(refusal(wrongSize).message).toContain('Spec ID header: digest size 32 for sha1 (entry 0), expected 20');
    const event = smallLog();
    event.writeUInt16LE(0x000c, FIRST_EVENT2 + 12); // sha384 where sha1 stands
    expect(refusal(event).message).toBe(
      `event log: event 1 at offset ${FIRST_EVENT2 + 12}: digest algorithm 0x000c is not listed in the Spec ID header (sha1 0x0004, sha256 0x000b)`,
    );
    const twice = smallLog();
    twice.writeUInt16LE(0x0004, FIRST_EVENT2 + 12 + 22); // a second sha1 where sha256 stands
    expect(refusal(twice).message).toBe(
      `event log: event 1 at offset ${FIRST_EVENT2 + 12 + 22}: a second sha1 digest in one event`,
    );
    const count = smallLog();
    count.writeUInt32LE(3, FIRST_EVENT2 + 8);
    expect(refusal(count).message).toBe(
      `event log: event 1 at offset ${FIRST_EVENT2 + 8}: digest count 3 does not match the 2 algorithms of the Spec ID header (sha1, sha256)`,
    );
    const many = smallLog();
    many.writeUInt32LE(1000, 32 + 24);
    expect(refusal(many).message).toContain('Spec ID header: numberOfAlgorithms 1000, expected 1 to 8');
  });

  it('refuses a separator whose data is not 00000000 or ffffffff, and a PCR index out of range', () => {
    const bad = sha1Event(7, EVENT_TYPES.EV_SEPARATOR, Buffer.from('01000000', 'hex'));
    expect(refusal(Buffer.concat([debian.subarray(0, 0), bad])).message).toBe(
      'event log: event 0 at offset 0: EV_SEPARATOR data must be 00000000 or ffffffff, got 4 bytes 01000000',
    );
    const long = sha1Event(7, EVENT_TYPES.EV_SEPARATOR, Buffer.alloc(8));
    expect(refusal(long).message).toContain('got 8 bytes 0000000000000000');
    expect(parseEventLog(sha1Event(7, EVENT_TYPES.EV_SEPARATOR, separatorData(true))).events).toHaveLength(1);
    const pcr = smallLog();
    pcr.writeUInt32LE(24, FIRST_EVENT2);
    expect(refusal(pcr).message).toBe(
      `event log: event 1 at offset ${FIRST_EVENT2}: PCR index 24 is out of range (0 to 23)`,
    );
  });

  it('refuses a StartupLocality that is late, repeated, for another PCR or of an impossible locality', () => {
    const locality = (value: number, pcr = 0) =>
      sha1Event(
        pcr,
        EVENT_TYPES.EV_NO_ACTION,
        Buffer.concat([Buffer.from('StartupLocality\0', 'latin1'), Buffer.from([value])]),
      );
    const extend0 = sha1Event(0, EVENT_TYPES.EV_POST_CODE, Buffer.alloc(0));
    expect(parseEventLog(Buffer.concat([locality(3), extend0])).startupLocality).toBe(3);
    expect(refusal(Buffer.concat([extend0, locality(3)])).message).toBe(
      'event log: event 1 at offset 32: StartupLocality event after PCR 0 was extended',
    );
    expect(refusal(Buffer.concat([locality(3), locality(3)])).message).toContain('a second StartupLocality event');
    expect(refusal(locality(3, 1)).message).toContain('StartupLocality event for PCR 1, expected PCR 0');
    expect(refusal(locality(2)).message).toContain('StartupLocality 2, expected one of 0, 3, 4');
  });
});
