import { describe, expect, it } from 'vitest';
import { readBootApplications, readKernelCommandLines, readSecureBoot } from './boot-state.js';
import { EFI_GLOBAL_VARIABLE_GUID } from './event-data.js';
import { cString, separatorData, uefiVariableData } from './event-data-builders.js';
import { checkEventPolicy, eventPolicyFromLog } from './event-policy.js';
import { EventLogWriter } from './event-log-writer.js';
import type { EventToWrite } from './event-log-writer.js';
import { EVENT_TYPES } from './event-types.js';
import { bankDigest } from './hash-banks.js';
import { parseEventLog } from './parse-event-log.js';
import { extendsPcr } from './replay.js';
import { realLogs } from './testdata.fixture.js';

// The TPM binds digests and their order per PCR; it binds neither an event's type nor its data.
// What a boot proves must not change when a log relabels its events.

const logs = await realLogs();

/** `bytes` with every extending event's type replaced by `type` (offset 4 in both formats). */
function relabelled(bytes: Buffer, type: number): Buffer {
  const copy = Buffer.from(bytes);
  for (const event of parseEventLog(bytes).events) {
    if (extendsPcr(event)) copy.writeUInt32LE(type, event.offset + 4);
  }
  return copy;
}

const secureBootVariable = (value: number) =>
  uefiVariableData(EFI_GLOBAL_VARIABLE_GUID, 'SecureBoot', Buffer.from([value]));
/** GRUB's way: the string after the label is what is hashed. */
const grub = (label: string, text: string): EventToWrite => ({
  pcr: 8,
  type: 'EV_IPL',
  data: cString(`${label}: ${text}`),
  digests: { sha256: bankDigest('sha256', Buffer.from(text)) },
});
const logOf = (events: readonly EventToWrite[]) => {
  const writer = new EventLogWriter({ banks: ['sha256'] });
  for (const event of events) writer.append(event);
  return parseEventLog(writer.bytes());
};

describe('what a boot proves does not depend on event types', () => {
  it('real logs with every type relabelled prove the same and satisfy the same policy', () => {
    for (const { name, bytes } of logs) {
      const reference = eventPolicyFromLog(parseEventLog(bytes));
      for (const type of [EVENT_TYPES.EV_EFI_ACTION, EVENT_TYPES.EV_EFI_BOOT_SERVICES_DRIVER, 0x12345678]) {
        const log = parseEventLog(relabelled(bytes, type));
        expect(eventPolicyFromLog(log), `${name} relabelled 0x${type.toString(16)}`).toEqual(reference);
        expect(checkEventPolicy(log, reference), name).toEqual([]);
      }
    }
  });

  it('reads Secure Boot before PCR 7 separator only, and the separator by its digest', () => {
    const log = logOf([
      { pcr: 7, type: 'EV_EFI_ACTION', data: secureBootVariable(0) },
      { pcr: 7, type: 'EV_EFI_VARIABLE_BOOT', data: separatorData() },
      { pcr: 7, type: 'EV_EFI_VARIABLE_DRIVER_CONFIG', data: secureBootVariable(1) },
    ]);
    expect(readSecureBoot(log).variables.map((v) => [v.event.index, v.value])).toEqual([[1, 'disabled']]);
    const noSeparator = logOf([{ pcr: 7, type: 'EV_EFI_VARIABLE_DRIVER_CONFIG', data: secureBootVariable(1) }]);
    expect(checkEventPolicy(noSeparator, { secureBoot: 'enabled' }).map((v) => v.message)).toEqual([
      'Secure Boot must be enabled: PCR 7 has no separator, so nothing in it can be placed before the boot loader ran',
    ]);
  });

  it("finds GRUB's command line by the linux command it follows, whatever its label says", () => {
    const log = logOf([
      // GRUB measures the command after parsing (quotes gone), the command line with them.
      grub('grub_cmd', 'linux /vmlinuz a b ro'),
      // Relabelled a command; its content is still what follows the linux command.
      grub('grub_cmd', '/vmlinuz "a b" ro'),
      grub('kernel_cmdline', '/vmlinuz ro quiet'),
    ]);
    expect(readKernelCommandLines(log).commandLines.map((c) => [c.event.index, c.commandLine, c.bootLoader])).toEqual([
      [2, '/vmlinuz "a b" ro', 'grub'],
    ]);
  });

  it('reports a linux command without its command line, and events that show nothing', () => {
    const log = logOf([
      grub('grub_cmd', 'linux /vmlinuz init=/bin/sh'),
      grub('grub_cmd', 'boot'),
      { pcr: 12, type: 'EV_IPL', data: cString('nothing to see'), digests: { sha256: Buffer.alloc(32, 7) } },
    ]);
    const violations = checkEventPolicy(log, { kernelCommandLines: ['/vmlinuz ro'] });
    expect(violations.map((v) => v.message)).toEqual([
      'PCR 12 event does not show what it measured (its data does not hash to its digest): it may be the kernel command line (event 3, PCR 12, labelled EV_IPL)',
      "GRUB's linux command is not followed in PCR 8 by the kernel command line GRUB measures with it (event 1, PCR 8, labelled EV_IPL)",
    ]);
  });

  it("reads systemd-boot's UTF-16 command line", () => {
    const arch = parseEventLog(logs.find((l) => l.name === 'arch-linux-workstation.bin')!.bytes);
    const [line] = readKernelCommandLines(arch).commandLines;
    expect([line?.bootLoader, line?.commandLine.startsWith('initrd=\\intel-ucode.img')]).toEqual([
      'systemd-boot',
      true,
    ]);
  });

  it("counts every PCR 4 event but the firmware's separator and action strings as code", () => {
    const log = logOf([
      { pcr: 4, type: 'EV_EFI_ACTION', data: Buffer.from('Calling EFI Application from Boot Option') },
      { pcr: 4, type: 'EV_EFI_ACTION', data: separatorData() },
      { pcr: 4, type: 'EV_EFI_ACTION', data: Buffer.alloc(32), digests: { sha256: Buffer.alloc(32, 0xab) } },
      { pcr: 4, type: 'EV_EFI_ACTION', data: Buffer.from('MZ\0\0PE\0\0') },
    ]);
    expect(readBootApplications(log).map((e) => e.index)).toEqual([3, 4]);
  });
});
