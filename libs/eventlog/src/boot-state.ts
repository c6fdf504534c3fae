import { uefiVariable } from './event-data.js';
import { asciiText, extendsSeparator, measuredBytes } from './measured-bytes.js';
import type { EventLog, LogEvent } from './parse-event-log.js';
import { eventsForPcr } from './replay.js';
import { eventText } from './uefi-text.js';

// What a log proves about a boot, read only from what the TPM binds: digests, their order per
// PCR, and data that hashes to its digest. Event types are labels: nothing here reads them, so a
// node cannot relabel an event out of a rule (go-tpm-tools' ParseMachineState works the same way
// on firmware logs). Meaningful only for a log whose replay equals the quoted PCRs.

export type SecureBootValue = 'enabled' | 'disabled' | 'absent' | 'invalid';

/** Secure Boot as the firmware measured it: from PCR 7's events before its separator. */
export interface SecureBootReading {
  /** False when PCR 7 has no separator: nothing in it can be placed before the boot loader ran. */
  readonly separator: boolean;
  /** The SecureBoot variable's measurements before the separator. */
  readonly variables: readonly { readonly event: LogEvent; readonly value: SecureBootValue }[];
  /** Events before the separator whose data does not show what they measured (any may be the variable). */
  readonly unreadable: readonly LogEvent[];
}

/**
 * Reads Secure Boot's state. Only events before PCR 7's separator count: after it, anything that
 * runs (the boot loader, the OS) can extend PCR 7 with a "SecureBoot = 1" of its own.
 */
export function readSecureBoot(log: EventLog): SecureBootReading {
  const events = eventsForPcr(log, 7);
  const end = events.findIndex(extendsSeparator);
  if (end === -1) return { separator: false, variables: [], unreadable: [] };
  const variables: { event: LogEvent; value: SecureBootValue }[] = [];
  const unreadable: LogEvent[] = [];
  for (const event of events.slice(0, end)) {
    const bytes = measuredBytes(event);
    if (bytes === undefined) {
      unreadable.push(event);
      continue;
    }
    const variable = uefiVariable(bytes);
    if (variable.kind === 'uefi-variable' && variable.secureBootVariable === 'SecureBoot') {
      variables.push({ event, value: variable.secureBoot ?? 'invalid' });
    }
  }
  return { separator: true, variables, unreadable };
}

/** The PCRs boot loaders measure the kernel command line into: GRUB and systemd-boot 8, systemd-stub 12. */
export const COMMAND_LINE_PCRS: readonly number[] = [8, 12];

/** Kernel command lines as the boot loader measured them. */
export interface CommandLineReading {
  readonly commandLines: readonly {
    readonly event: LogEvent;
    readonly commandLine: string;
    readonly bootLoader: 'grub' | 'systemd-boot';
  }[];
  /** Events in those PCRs whose data does not show what they measured (any may be a command line). */
  readonly unreadable: readonly LogEvent[];
  /** GRUB `linux` commands not followed by the command line GRUB measures when it runs one. */
  readonly unpaired: readonly LogEvent[];
}

/** GRUB's command that loads a kernel, as it measures it: "linux /vmlinuz root=… ro" (the path captured). */
const GRUB_LINUX_COMMAND = /^linux(?:efi|16)?[ \t]+(\S+)/;

/**
 * Reads the kernel command lines from PCRs 8 and 12. systemd-boot and systemd-stub measure the
 * command line as a UTF-16 string. GRUB measures each command it runs, then, for a `linux` command,
 * the command line it hands the kernel ("/vmlinuz root=… ro", arguments with spaces quoted) as the
 * next event of PCR 8. Both strings are bound, but "kernel_cmdline" versus "grub_cmd" is only a
 * label, so the command line is found by what it follows: a `linux` command, whose kernel path it
 * starts with. A `linux` command without it is reported, so no command line hides behind a label.
 */
export function readKernelCommandLines(log: EventLog): CommandLineReading {
  const commandLines: { event: LogEvent; commandLine: string; bootLoader: 'grub' | 'systemd-boot' }[] = [];
  const unreadable: LogEvent[] = [];
  const unpaired: LogEvent[] = [];
  for (const pcr of COMMAND_LINE_PCRS) {
    const texts = eventsForPcr(log, pcr).map((event) => {
      const bytes = measuredBytes(event);
      if (bytes === undefined) unreadable.push(event);
      return { event, text: bytes === undefined ? undefined : eventText(bytes) };
    });
    for (const [i, { event, text }] of texts.entries()) {
      if (text?.encoding === 'utf-16le') {
        commandLines.push({ event, commandLine: text.text, bootLoader: 'systemd-boot' });
        continue;
      }
      const kernel = text === undefined ? undefined : GRUB_LINUX_COMMAND.exec(text.text)?.[1];
      if (kernel === undefined) continue;
      const next = texts[i + 1];
      const line = next?.text?.encoding === 'utf-8' ? next.text.text : undefined;
      if (next !== undefined && line !== undefined && (line === kernel || line.startsWith(`${kernel} `))) {
        commandLines.push({ event: next.event, commandLine: line, bootLoader: 'grub' });
      } else {
        unpaired.push(event);
      }
    }
  }
  const byIndex = (a: LogEvent, b: LogEvent): number => a.index - b.index;
  return { commandLines, unreadable: unreadable.sort(byIndex), unpaired: unpaired.sort(byIndex) };
}

/**
 * The code PCR 4 measured: every event in it but the firmware's own separator and action strings
 * ("Calling EFI Application from Boot Option"), whose data shows them. A PE image's digest is its
 * Authenticode hash, which no such string hashes to, so labelling an image anything else does not
 * take it out of this list.
 */
export function readBootApplications(log: EventLog): LogEvent[] {
  return eventsForPcr(log, 4).filter((event) => {
    if (extendsSeparator(event)) return false;
    const bytes = measuredBytes(event);
    return bytes === undefined || asciiText(bytes) === undefined;
  });
}
