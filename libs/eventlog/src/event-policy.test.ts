import { describe, expect, it } from 'vitest';
import { EFI_GLOBAL_VARIABLE_GUID } from './event-data.js';
import { cString, separatorData, uefiVariableData } from './event-data-builders.js';
import { checkEventPolicy, eventPolicyFromLog, parseEventPolicy } from './event-policy.js';
import { EventLogWriter } from './event-log-writer.js';
import { bankDigest } from './hash-banks.js';
import { parseEventLog } from './parse-event-log.js';
import { realLogs } from './testdata.fixture.js';

const logs = await realLogs();
const real = (name: string) => parseEventLog(logs.find((l) => l.name === name)!.bytes);

/** GRUB's way: the string after the label is what is hashed. */
const grub = (label: string, text: string) => ({
  pcr: 8,
  type: 'EV_IPL' as const,
  data: cString(`${label}: ${text}`),
  digests: { sha1: bankDigest('sha1', Buffer.from(text)), sha256: bankDigest('sha256', Buffer.from(text)) },
});

/** A crafted log: Secure Boot `on` or off, one boot application, GRUB's linux command and command line. */
function crafted(options: { secureBoot: number; claimSecureBoot?: number; commandLine?: string }) {
  const writer = new EventLogWriter({ banks: ['sha1', 'sha256'] });
  const measured = uefiVariableData(EFI_GLOBAL_VARIABLE_GUID, 'SecureBoot', Buffer.from([options.secureBoot]));
  const claimed = uefiVariableData(
    EFI_GLOBAL_VARIABLE_GUID,
    'SecureBoot',
    Buffer.from([options.claimSecureBoot ?? options.secureBoot]),
  );
  // The digests are those of what was measured; the data is what the log claims.
  writer.append({
    pcr: 7,
    type: 'EV_EFI_VARIABLE_DRIVER_CONFIG',
    data: claimed,
    digests: { sha1: bankDigest('sha1', measured), sha256: bankDigest('sha256', measured) },
  });
  writer.append({ pcr: 7, type: 'EV_SEPARATOR', data: separatorData() });
  writer.append({
    pcr: 4,
    type: 'EV_EFI_BOOT_SERVICES_APPLICATION',
    data: Buffer.alloc(32),
    digests: { sha1: Buffer.alloc(20, 1), sha256: Buffer.alloc(32, 0xab) },
  });
  const line = options.commandLine ?? 'console=ttyS0';
  writer.append(grub('grub_cmd', `linux /vmlinuz ${line}`));
  writer.append(grub('kernel_cmdline', `/vmlinuz ${line}`));
  return parseEventLog(writer.bytes());
}

describe('policy on boot events', () => {
  it('refuses Secure Boot off where the rule asks for it on, naming rule and event', () => {
    const violations = checkEventPolicy(crafted({ secureBoot: 0 }), { secureBoot: 'enabled' });
    expect(violations.map((v) => [v.rule, v.event?.index, v.message])).toEqual([
      [
        'secureBoot',
        1,
        "Secure Boot must be enabled: the SecureBoot variable measured before PCR 7's separator is disabled (event 1, PCR 7, labelled EV_EFI_VARIABLE_DRIVER_CONFIG)",
      ],
    ]);
    expect(checkEventPolicy(crafted({ secureBoot: 1 }), { secureBoot: 'enabled' })).toEqual([]);
  });

  it('does not believe event data that does not hash to the digest', () => {
    // Measured 0 (off), the log claims 1 (on): the claim is not what the PCR holds.
    const violations = checkEventPolicy(crafted({ secureBoot: 0, claimSecureBoot: 1 }), { secureBoot: 'enabled' });
    expect(violations.map((v) => v.message)).toEqual([
      "Secure Boot must be enabled: PCR 7 event before its separator does not show what it measured (its data does not hash to its digest), so Secure Boot's state cannot be read (event 1, PCR 7, labelled EV_EFI_VARIABLE_DRIVER_CONFIG)",
    ]);
  });

  it('checks real logs: Secure Boot on RHEL, off on Ubuntu 21.04, absent on the workstation', () => {
    expect(checkEventPolicy(real('rhel8-uefi.bin'), { secureBoot: 'enabled' })).toEqual([]);
    expect(checkEventPolicy(real('ubuntu-2104-no-secure-boot.bin'), { secureBoot: 'enabled' })[0]?.message).toBe(
      "Secure Boot must be enabled: the SecureBoot variable measured before PCR 7's separator is disabled (event 3, PCR 7, labelled EV_EFI_VARIABLE_DRIVER_CONFIG)",
    );
    expect(checkEventPolicy(real('arch-linux-workstation.bin'), { secureBoot: 'enabled' })[0]?.message).toBe(
      "Secure Boot must be enabled: the SecureBoot variable measured before PCR 7's separator is absent (event 3, PCR 7, labelled EV_EFI_VARIABLE_DRIVER_CONFIG)",
    );
  });

  it('allows only the listed kernel command lines and boot application digests', () => {
    const log = crafted({ secureBoot: 1, commandLine: 'console=ttyS0 init=/bin/sh' });
    const violations = checkEventPolicy(log, {
      kernelCommandLines: ['/vmlinuz console=ttyS0'],
      bootApplications: ['cd'.repeat(32)],
    });
    expect(violations.map((v) => v.message)).toEqual([
      'kernel command line "/vmlinuz console=ttyS0 init=/bin/sh" is not allowed (event 5, PCR 8, labelled EV_IPL)',
      `PCR 4 extends sha256:${'ab'.repeat(32)}, which is not an allowed boot application (event 3, PCR 4, labelled EV_EFI_BOOT_SERVICES_APPLICATION)`,
      'the log shows no allowed boot application in PCR 4',
    ]);
    expect(
      checkEventPolicy(crafted({ secureBoot: 1 }), {
        kernelCommandLines: ['/vmlinuz console=ttyS0'],
        bootApplications: ['ab'.repeat(32)],
      }),
    ).toEqual([]);
  });

  it('derives the reference state of a known-good log, which that log satisfies and others do not', () => {
    for (const { name } of logs) {
      const log = real(name);
      expect(checkEventPolicy(log, eventPolicyFromLog(log)), name).toEqual([]);
    }
    const rhel = eventPolicyFromLog(real('rhel8-uefi.bin'));
    expect(rhel.secureBoot).toBe('enabled');
    expect(rhel.kernelCommandLines).toHaveLength(1);
    expect(rhel.bootApplications).toHaveLength(3);
    expect(eventPolicyFromLog(real('ubuntu-2104-no-secure-boot.bin')).secureBoot).toBeUndefined();
    expect(eventPolicyFromLog(real('debian-10.bin')).bootApplications).toBeUndefined(); // SHA-1 only
    const ubuntu = checkEventPolicy(real('ubuntu-1804-amd-sev.bin'), rhel).map((v) => v.rule);
    expect(ubuntu).toEqual(expect.arrayContaining(['secureBoot', 'kernelCommandLines', 'bootApplications']));
  });

  it('reads a policy from a file, naming a bad field', () => {
    expect(parseEventPolicy({ secureBoot: 'enabled', bootApplications: ['ab'.repeat(32)] })).toEqual({
      secureBoot: 'enabled',
      bootApplications: ['ab'.repeat(32)],
    });
    expect(() => parseEventPolicy({ secureboot: 'enabled' })).toThrow('eventPolicy.secureboot: unknown rule');
    expect(() => parseEventPolicy({ secureBoot: true })).toThrow('eventPolicy.secureBoot: expected "enabled"');
    expect(() => parseEventPolicy({ bootApplications: ['AB'.repeat(32)] })).toThrow(
      'eventPolicy.bootApplications: expected a non-empty list of 64 lower-case hex',
    );
    expect(() => parseEventPolicy({ kernelCommandLines: [] })).toThrow(
      'eventPolicy.kernelCommandLines: expected a non-empty list of strings',
    );
    expect(() => parseEventPolicy([])).toThrow('eventPolicy: expected an object');
  });
});
