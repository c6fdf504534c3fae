import { bankDigest } from './hash-banks.js';
import type { LogEvent } from './parse-event-log.js';
import { eventText } from './uefi-text.js';

/**
 * GRUB logs "grub_cmd: linux …" and "kernel_cmdline: …" (RHEL: "grub_cmd linux …") but hashes
 * only what follows the prefix: the prefix is a label, bound to nothing.
 */
const GRUB_PREFIXES: readonly string[] = ['grub_cmd: ', 'grub_cmd ', 'kernel_cmdline: ', 'grub_kernel_cmdline '];

/**
 * The bytes an event measured, when its data shows them: the first reading of the data that
 * hashes to the event's digest in every bank (the data itself; its text without trailing NULs, or
 * with one; systemd-boot's UTF-16 string with its NUL; the text after a GRUB label). Undefined when
 * no reading does: the data then says nothing about what was measured. The event's type is not
 * consulted, because the TPM does not bind it.
 */
export function measuredBytes(event: LogEvent): Buffer | undefined {
  return readings(event.data).find((bytes) => hashesToDigests(event, bytes));
}

function readings(data: Buffer): Buffer[] {
  const out = [data];
  const decoded = eventText(data);
  if (decoded === undefined) return out;
  const { text, encoding } = decoded;
  if (encoding === 'utf-16le') return [...out, Buffer.from(`${text}\0`, 'utf16le')];
  out.push(Buffer.from(text, 'utf8'), Buffer.from(`${text}\0`, 'utf8'));
  for (const prefix of GRUB_PREFIXES) {
    if (!text.startsWith(prefix)) continue;
    const rest = text.slice(prefix.length);
    out.push(Buffer.from(rest, 'utf8'), Buffer.from(`${rest}\0`, 'utf8'));
  }
  return out;
}

/** Whether H(bytes) equals the event's digest in every bank it has (an event with no digest: never). */
export function hashesToDigests(event: LogEvent, bytes: Buffer): boolean {
  if (event.digests.size === 0) return false;
  for (const [bank, digest] of event.digests) {
    if (!bankDigest(bank, bytes).equals(digest)) return false;
  }
  return true;
}

const SEPARATOR_VALUES = [Buffer.alloc(4, 0), Buffer.alloc(4, 0xff)];

/**
 * Whether the event extended a separator (00000000, or ffffffff for an error), known by its digest
 * alone: the firmware's separator marks where its measurements of a PCR end, whatever the log
 * calls the event.
 */
export function extendsSeparator(event: LogEvent): boolean {
  return event.digests.size > 0 && SEPARATOR_VALUES.some((value) => hashesToDigests(event, value));
}

/** The measured bytes as printable ASCII text (an EFI action string such as "Calling EFI Application from Boot Option"). */
export function asciiText(bytes: Buffer): string | undefined {
  const decoded = eventText(bytes);
  return decoded?.encoding === 'utf-8' && /^[\x20-\x7e]+$/.test(decoded.text) ? decoded.text : undefined;
}
