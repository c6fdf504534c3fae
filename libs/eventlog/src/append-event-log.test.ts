import { describe, expect, it } from 'vitest';
import { appendEventLog } from './append-event-log.js';
import { cString } from './event-data-builders.js';
import { EventLogWriter } from './event-log-writer.js';
import { bankDigest } from './hash-banks.js';
import type { BankName } from './hash-banks.js';
import { parseEventLog } from './parse-event-log.js';
import { replayEventLog } from './replay.js';
import { realLogs } from './testdata.fixture.js';

const logs = await realLogs();
const real = (name: string) => logs.find((l) => l.name === name)!.bytes;

/** What the bootstrapper logs: the PCR 15 cluster-ID mark, in the boot log's banks. */
function runtimeLog(banks: BankName[], clusterId = Buffer.alloc(32, 7)) {
  const writer = new EventLogWriter({ banks });
  writer.append({ pcr: 15, type: 'EV_EVENT_TAG', data: clusterId });
  return writer.bytes();
}

describe('appending the runtime log to the boot log', () => {
  it("continues the boot log: its events are numbered after the boot log's, and the replay goes on", () => {
    const boot = real('rhel8-uefi.bin');
    const bootLog = parseEventLog(boot);
    const { log } = appendEventLog(boot, runtimeLog([...bootLog.banks]));
    expect(log.events).toHaveLength(bootLog.events.length + 1);
    const mark = log.events.at(-1)!;
    expect([mark.index, mark.pcr, mark.typeName]).toEqual([bootLog.events.length, 15, 'EV_EVENT_TAG']);
    const pcr15 = bankDigest('sha256', Buffer.alloc(32), bankDigest('sha256', Buffer.alloc(32, 7)));
    expect(replayEventLog(log).get('sha256')?.get(15)).toEqual(pcr15);
    // Every PCR the boot log explains keeps its value.
    for (const [pcr, value] of replayEventLog(bootLog).get('sha256')!) {
      expect(replayEventLog(log).get('sha256')?.get(pcr)).toEqual(value);
    }
  });

  it('refuses what would not be one log: other banks, a SHA-1-format boot log, a second StartupLocality', () => {
    const boot = real('rhel8-uefi.bin');
    expect(() => appendEventLog(boot, runtimeLog(['sha256']))).toThrow(
      "the appended log's banks (sha256(32)) are not the boot log's (sha1(20),sha256(32),sha384(48))",
    );
    expect(() => appendEventLog(real('debian-10.bin'), runtimeLog(['sha256']))).toThrow(
      'the boot log is in the SHA-1 format',
    );
    const withLocality = new EventLogWriter({ banks: ['sha1', 'sha256', 'sha384'], startupLocality: 3 });
    withLocality.append({ pcr: 15, type: 'EV_EVENT_TAG', data: cString('x') });
    expect(() => appendEventLog(boot, withLocality.bytes())).toThrow('the appended log has a StartupLocality event');
  });
});
