import { randomBytes } from 'node:crypto';
import {
  EFI_GLOBAL_VARIABLE_GUID,
  EventLogWriter,
  bankDigest,
  cString,
  eventPolicyFromLog,
  imageLoadEventData,
  parseEventLog,
  replayEventLog,
  separatorData,
  uefiVariableData,
} from '@constellation/eventlog';
import type { EventPolicy, EventTypeName } from '@constellation/eventlog';
import { startSwtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { describe, expect, it } from 'vitest';
import { AttestationError } from './errors.js';
import { TpmIssuer } from './tpm-issuer.js';
import { TpmValidator } from './tpm-validator.js';

// Issue 50, item 2. The TPM binds an event's digest to its PCR, in order; it binds neither the
// event's type nor its data. A node that booted an unapproved boot loader with Secure Boot off and
// a command line of its own sends its true digests, so its log replays to its genuine quote, but
// relabels what would give it away, and from the running OS extends PCR 7 and 8 with "good"
// events. The policy is what `constellation config measurements from-eventlog --pcrs 0` writes
// from the approved boot's log: PCR 0 enforced, and the event rules that log satisfies.

/** One measurement as the machine made it: `measured` is what was hashed (default: `data`). */
interface Measurement {
  readonly pcr: number;
  readonly type: EventTypeName;
  readonly data: Buffer;
  readonly measured?: Buffer;
}

const secureBoot = (on: boolean) => uefiVariableData(EFI_GLOBAL_VARIABLE_GUID, 'SecureBoot', Buffer.from([on ? 1 : 0]));
const text = (pcr: number, type: EventTypeName, value: string): Measurement => ({
  pcr,
  type,
  data: Buffer.from(value),
});
/** GRUB logs "grub_cmd: <command>" and hashes the command alone; the same for the kernel command line. */
const grub = (prefix: 'grub_cmd' | 'kernel_cmdline', value: string): Measurement => ({
  pcr: 8,
  type: 'EV_IPL',
  data: cString(`${prefix}: ${value}`),
  measured: Buffer.from(value),
});
const loader = (image: string): Measurement => ({
  pcr: 4,
  type: 'EV_EFI_BOOT_SERVICES_APPLICATION',
  data: imageLoadEventData({ length: 4096 }),
  measured: Buffer.from(image),
});

/** A firmware boot: the same firmware, then Secure Boot, the loader and its command line. */
function firmwareBoot(options: { secureBoot: boolean; loader: string; commandLine: string }): Measurement[] {
  return [
    text(0, 'EV_S_CRTM_VERSION', 'firmware v1'),
    { pcr: 7, type: 'EV_EFI_VARIABLE_DRIVER_CONFIG', data: secureBoot(options.secureBoot) },
    { pcr: 7, type: 'EV_SEPARATOR', data: separatorData() },
    text(4, 'EV_EFI_ACTION', 'Calling EFI Application from Boot Option'),
    { pcr: 4, type: 'EV_SEPARATOR', data: separatorData() },
    loader(options.loader),
    grub('grub_cmd', `linux /vmlinuz ${options.commandLine}`),
    grub('kernel_cmdline', `/vmlinuz ${options.commandLine}`),
  ];
}

const APPROVED = { secureBoot: true, loader: 'approved boot loader', commandLine: 'ro console=ttyS0' };
const ATTACKER = { secureBoot: false, loader: 'unapproved boot loader', commandLine: 'init=/bin/sh' };
/** What the attacker's running OS extends afterwards: the approved boot's "good" events. */
const FORGED_AFTER_BOOT: Measurement[] = [
  { pcr: 7, type: 'EV_EFI_VARIABLE_DRIVER_CONFIG', data: secureBoot(true) },
  grub('grub_cmd', `linux /vmlinuz ${APPROVED.commandLine}`),
  grub('kernel_cmdline', `/vmlinuz ${APPROVED.commandLine}`),
];

/** The log of `measurements`, each event written as `relabel` presents it, over its true digest. */
function logOf(measurements: readonly Measurement[], relabel: (m: Measurement, i: number) => Measurement = (m) => m) {
  const writer = new EventLogWriter({ banks: ['sha256'] });
  for (const [i, m] of measurements.entries()) {
    const shown = relabel(m, i);
    writer.append({ ...shown, digests: { sha256: bankDigest('sha256', m.measured ?? m.data) } });
  }
  return writer.bytes();
}

const reference = parseEventLog(logOf(firmwareBoot(APPROVED)));
/** `from-eventlog --pcrs 0`: PCR 0 from the approved boot, its event rules, PCR 15 as before init. */
const POLICY: EventPolicy = eventPolicyFromLog(reference);
const MEASUREMENTS = new Map([
  [0, { expected: replayEventLog(reference).get('sha256')!.get(0)!, warnOnly: false }],
  [15, { expected: Buffer.alloc(32), warnOnly: false }],
]);

/** Boots a fresh TPM through `measurements`, quotes it with `log`, and validates with the policy. */
async function attest(measurements: readonly Measurement[], log: Buffer): Promise<() => unknown> {
  const swtpm = await startSwtpm();
  const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  try {
    await tpm.startup();
    for (const m of measurements) {
      await tpm.pcrExtend(m.pcr, [{ hash: 'sha256', digest: bankDigest('sha256', m.measured ?? m.data) }]);
    }
    const nonce = randomBytes(32);
    const document = await new TpmIssuer(tpm, { tcgEventLog: () => log }).issue(Buffer.alloc(32), nonce);
    const validator = new TpmValidator({ variant: 'qemu-vtpm', measurements: MEASUREMENTS, eventPolicy: POLICY });
    return () => validator.validate(document, nonce);
  } finally {
    await tpm.close();
    await swtpm.stop();
  }
}

function refusalOf(validate: () => unknown): string {
  try {
    validate();
  } catch (err) {
    expect(err).toBeInstanceOf(AttestationError);
    expect((err as AttestationError).reason).toBe('event-policy');
    return (err as AttestationError).message;
  }
  throw new Error('the relabelled boot was accepted');
}

const attackerBoot = [...firmwareBoot(ATTACKER), ...FORGED_AFTER_BOOT];
const SECURE_BOOT_OFF = 1;
const LOADER = 5;
const KERNEL_CMDLINE = 7;

describe('event rules hold on what the TPM binds, not on types and labels', () => {
  it('the policy is what the approved boot satisfies, and that boot is accepted', async () => {
    expect(POLICY).toEqual({
      secureBoot: 'enabled',
      kernelCommandLines: ['/vmlinuz ro console=ttyS0'],
      bootApplications: [bankDigest('sha256', Buffer.from(APPROVED.loader)).toString('hex')],
    });
    const approved = firmwareBoot(APPROVED);
    expect((await attest(approved, logOf(approved)))()).toBeDefined();
  });

  it('refuses the relabelled boot: Secure Boot off, an unapproved loader, its own command line', async () => {
    const log = logOf(attackerBoot, (m, i) => {
      // The measured SecureBoot=0 variable, labelled an action: no longer "a SecureBoot event".
      if (i === SECURE_BOOT_OFF) return { ...m, type: 'EV_EFI_ACTION' };
      // The unapproved loader, labelled a driver: no longer "a boot application".
      if (i === LOADER) return { ...m, type: 'EV_EFI_BOOT_SERVICES_DRIVER' };
      // Its command line, labelled a GRUB command: GRUB hashes both without their prefix.
      if (i === KERNEL_CMDLINE) return { ...m, data: cString(`grub_cmd: /vmlinuz ${ATTACKER.commandLine}`) };
      return m;
    });
    const message = refusalOf(await attest(attackerBoot, log));
    const attackerLoader = bankDigest('sha256', Buffer.from(ATTACKER.loader)).toString('hex');
    expect(message).toContain(
      "Secure Boot must be enabled: the SecureBoot variable measured before PCR 7's separator is disabled (event 2, PCR 7, labelled EV_EFI_ACTION) [rule secureBoot]",
    );
    expect(message).toContain(
      `PCR 4 extends sha256:${attackerLoader}, which is not an allowed boot application (event 6, PCR 4, labelled EV_EFI_BOOT_SERVICES_DRIVER) [rule bootApplications]`,
    );
    expect(message).toContain(
      `kernel command line "/vmlinuz ${ATTACKER.commandLine}" is not allowed (event 8, PCR 8, labelled EV_IPL) [rule kernelCommandLines]`,
    );
  }, 60_000);

  it('refuses events whose data was replaced so that nothing can be read from them', async () => {
    const log = logOf(attackerBoot, (m, i) =>
      i === SECURE_BOOT_OFF || i === KERNEL_CMDLINE - 1 || i === KERNEL_CMDLINE
        ? { ...m, type: 'EV_EFI_ACTION', data: Buffer.from('nothing to see') }
        : m,
    );
    const message = refusalOf(await attest(attackerBoot, log));
    expect(message).toContain(
      "PCR 7 event before its separator does not show what it measured (its data does not hash to its digest), so Secure Boot's state cannot be read (event 2, PCR 7, labelled EV_EFI_ACTION) [rule secureBoot]",
    );
    expect(message).toContain(
      'PCR 8 event does not show what it measured (its data does not hash to its digest): it may be the kernel command line (event 7, PCR 8, labelled EV_EFI_ACTION) [rule kernelCommandLines]',
    );
  }, 60_000);

  it('refuses Secure Boot events that come after PCR 7 separator as the only ones', async () => {
    // The firmware measured no SecureBoot variable at all; the OS extends one afterwards.
    const boot = firmwareBoot(APPROVED).filter((_, i) => i !== SECURE_BOOT_OFF);
    const measured = [...boot, FORGED_AFTER_BOOT[0]!];
    const message = refusalOf(await attest(measured, logOf(measured)));
    expect(message).toContain(
      "Secure Boot must be enabled: no SecureBoot variable was measured before PCR 7's separator [rule secureBoot]",
    );
  }, 60_000);

  it('refuses a log in which no boot application appears, whatever the labels', async () => {
    const boot = firmwareBoot(APPROVED).filter((_, i) => i !== LOADER);
    const message = refusalOf(await attest(boot, logOf(boot)));
    expect(message).toContain('the log shows no allowed boot application in PCR 4 [rule bootApplications]');
  }, 60_000);
});
