import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { EFI_GLOBAL_VARIABLE_GUID, describeEventData } from './event-data.js';
import {
  cString,
  filePathDevicePath,
  imageLoadEventData,
  separatorData,
  uefiVariableData,
} from './event-data-builders.js';
import { EventLogWriter } from './event-log-writer.js';
import type { EventToWrite, WrittenEvent } from './event-log-writer.js';
import { bankDigest } from './hash-banks.js';
import type { BankName } from './hash-banks.js';
import { parseEventLog } from './parse-event-log.js';
import { pcrBanksToJson, replayEventLog } from './replay.js';
import { tpm2Eventlog } from './testdata.fixture.js';

/** A boot as firmware, shim and GRUB would log it, with the digests the writer says to extend. */
function bootLog(banks: BankName[], startupLocality?: 0 | 3 | 4) {
  const writer = new EventLogWriter({ banks, ...(startupLocality === undefined ? {} : { startupLocality }) });
  const extended: WrittenEvent[] = [];
  const add = (event: EventToWrite) => extended.push(writer.append(event));
  add({ pcr: 0, type: 'EV_S_CRTM_VERSION', data: Buffer.from('1.0\0', 'utf16le') });
  add({
    pcr: 7,
    type: 'EV_EFI_VARIABLE_DRIVER_CONFIG',
    data: uefiVariableData(EFI_GLOBAL_VARIABLE_GUID, 'SecureBoot', Buffer.from([1])),
  });
  for (let pcr = 0; pcr <= 7; pcr++) add({ pcr, type: 'EV_SEPARATOR', data: separatorData() });
  const image = Buffer.from('a boot application');
  add({
    pcr: 4,
    type: 'EV_EFI_BOOT_SERVICES_APPLICATION',
    data: imageLoadEventData({ length: image.length, devicePath: filePathDevicePath('\\EFI\\BOOT\\BOOTX64.EFI') }),
    digests: Object.fromEntries(banks.map((b) => [b, bankDigest(b, image)])),
  });
  add({ pcr: 8, type: 'EV_IPL', data: cString('grub_cmd: linux /vmlinuz console=ttyS0') });
  add({ pcr: 8, type: 'EV_IPL', data: cString('kernel_cmdline: /vmlinuz console=ttyS0') });
  return { writer, extended };
}

describe('EventLogWriter', () => {
  it('writes a crypto-agile log that parses back to the same events and replays to what was extended', () => {
    const { writer, extended } = bootLog(['sha1', 'sha256', 'sha384'], 3);
    const log = parseEventLog(writer.bytes());
    expect(log.format).toBe('crypto-agile');
    expect(log.banks).toEqual(['sha1', 'sha256', 'sha384']);
    expect(log.startupLocality).toBe(3);
    expect(log.events).toHaveLength(writer.eventCount);
    expect(log.events.map((e) => e.typeName).slice(0, 4)).toEqual([
      'EV_NO_ACTION',
      'EV_NO_ACTION',
      'EV_S_CRTM_VERSION',
      'EV_EFI_VARIABLE_DRIVER_CONFIG',
    ]);
    // What the writer returned to extend, replayed by hand, is what the parsed log replays to.
    const byHand = new Map<BankName, Map<number, Buffer>>();
    for (const { pcr, digests } of extended) {
      for (const { hash, digest } of digests) {
        const bank = byHand.get(hash) ?? new Map<number, Buffer>();
        byHand.set(hash, bank);
        const start = Buffer.alloc(digest.length);
        if (pcr === 0) start[start.length - 1] = 3;
        bank.set(pcr, bankDigest(hash, bank.get(pcr) ?? start, digest));
      }
    }
    const replayed = replayEventLog(log);
    for (const [bank, values] of byHand) {
      expect(Object.fromEntries([...values].map(([p, v]) => [String(p), v.toString('hex')]))).toEqual(
        pcrBanksToJson(replayed)[bank],
      );
    }
    const view = describeEventData(log.events[3]!);
    expect(view.details).toMatchObject({
      kind: 'uefi-variable',
      secureBootVariable: 'SecureBoot',
      secureBoot: 'enabled',
    });
    expect(view.hashesToDigests).toBe(true);
    const image = log.events.find((e) => e.typeName === 'EV_EFI_BOOT_SERVICES_APPLICATION')!;
    expect(describeEventData(image).details).toMatchObject({ devicePath: '\\EFI\\BOOT\\BOOTX64.EFI' });
    expect(describeEventData(image).hashesToDigests).toBe(false);
  });

  it('writes logs tpm2_eventlog reads to the same events and PCRs', async () => {
    const dir = await tempDirForTest('eventlog-writer-');
    for (const banks of [['sha256'], ['sha1', 'sha256'], ['sha1', 'sha256', 'sha384']] as const) {
      const { writer } = bootLog([...banks]);
      const path = join(dir, `${banks.join('-')}.bin`);
      await writeFile(path, writer.bytes());
      const reference = await tpm2Eventlog(path);
      const log = parseEventLog(writer.bytes());
      expect(reference.events.map((e) => `${e.pcr} ${e.type}`)).toEqual(
        log.events.map((e) => `${e.pcr} ${e.typeName}`),
      );
      expect(reference.pcrs).toEqual(pcrBanksToJson(replayEventLog(log)));
    }
  });

  it('refuses what a reader would refuse', () => {
    const writer = new EventLogWriter({ banks: ['sha256'] });
    expect(() => writer.append({ pcr: 24, type: 'EV_IPL', data: Buffer.alloc(0) })).toThrow(
      'PCR index 24 is out of range (0 to 23)',
    );
    expect(() => writer.append({ pcr: 4, type: 'EV_SEPARATOR', data: Buffer.from([1, 0, 0, 0]) })).toThrow(
      'EV_SEPARATOR data must be 00000000 or ffffffff',
    );
    expect(() =>
      writer.append({ pcr: 4, type: 'EV_IPL', data: Buffer.alloc(0), digests: { sha1: Buffer.alloc(20) } }),
    ).toThrow('a digest for sha1, a bank this log does not have');
    expect(() =>
      writer.append({ pcr: 4, type: 'EV_IPL', data: Buffer.alloc(0), digests: { sha256: Buffer.alloc(20) } }),
    ).toThrow('the sha256 digest is 20 bytes, expected 32');
    writer.append({ pcr: 0, type: 'EV_POST_CODE', data: Buffer.alloc(0) });
    expect(() =>
      writer.append({ pcr: 0, type: 'EV_NO_ACTION', data: Buffer.from('StartupLocality\0\u0003', 'latin1') }),
    ).toThrow('a StartupLocality event must directly follow the header');
    expect(() => new EventLogWriter({ banks: [] })).toThrow('at least one bank');
    const small = new EventLogWriter({ banks: ['sha256'], maxEvents: 3 });
    small.append({ pcr: 1, type: 'EV_IPL', data: Buffer.alloc(0) });
    small.append({ pcr: 1, type: 'EV_IPL', data: Buffer.alloc(0) });
    expect(() => small.append({ pcr: 1, type: 'EV_IPL', data: Buffer.alloc(0) })).toThrow(
      'already holds 3 events (the limit)',
    );
    expect(parseEventLog(small.bytes()).events).toHaveLength(3);
    const tight = new EventLogWriter({ banks: ['sha256'], maxBytes: 200 });
    expect(() => tight.append({ pcr: 1, type: 'EV_IPL', data: Buffer.alloc(200) })).toThrow(
      'more than the limit of 200',
    );
  });
});
