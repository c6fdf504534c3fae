import { UkiError } from './errors.js';
import type { LoadedSection } from './pe-image.js';

// The kernel command line systemd-stub 252 hands the kernel, from the UKI's .cmdline section, as
// its source does it (Secure Boot on, or no LoadOptions from the firmware, which is what OVMF
// passes for the boot options it creates itself):
//   stub.c:    cmdline = xstrn8_to_16(section, VirtualSize); mangle_stub_cmdline(cmdline)
//   linux.c:   LoadOptions = cmdline; LoadOptionsSize = strsize16(cmdline)   (UTF-16 with its NUL)
// The kernel's EFI stub measures exactly LoadOptionsSize bytes of LoadOptions into PCR 9.

/** The LoadOptions the kernel receives: the text and the bytes measured (UTF-16LE plus a NUL). */
export interface StubLoadOptions {
  readonly text: string;
  readonly bytes: Buffer;
}

/** systemd-stub 252's LoadOptions for a .cmdline section as loaded. */
export function stubLoadOptions(cmdline: LoadedSection): StubLoadOptions {
  // Zero fill after the file bytes ends the string as a NUL would, so the file bytes suffice.
  const units = utf8ToUcs2(cmdline.fileBytes);
  const nul = units.indexOf(0);
  const mangled = mangleStubCmdline(nul < 0 ? units : units.slice(0, nul));
  const bytes = Buffer.alloc((mangled.length + 1) * 2);
  mangled.forEach((unit, i) => bytes.writeUInt16LE(unit, i * 2));
  // No surrogates survive the conversion, so the UTF-16LE bytes decode to exactly these units.
  return { text: bytes.subarray(0, mangled.length * 2).toString('utf16le'), bytes };
}

/**
 * efi-string.c xstrn8_to_16: UTF-8 to UCS-2, stopping at a NUL where a character starts; invalid or
 * cut-short sequences are skipped whole (their declared length), characters outside the BMP and
 * surrogates are dropped. No check for overlong forms, so C0 80 yields a 0 unit.
 */
function utf8ToUcs2(bytes: Uint8Array): number[] {
  const out: number[] = [];
  let at = 0;
  while (at < bytes.length && bytes[at] !== 0) {
    const lead = bytes[at] ?? 0;
    const [length, initial] = sequenceStart(lead);
    let unichar: number | undefined = length === 0 ? undefined : initial;
    const consumed = Math.max(length, 1);
    if (unichar !== undefined && at + length > bytes.length) unichar = undefined;
    for (let i = 1; unichar !== undefined && i < length; i++) {
      const next = bytes[at + i] ?? 0;
      unichar = (next & 0xc0) === 0x80 ? unichar * 64 + (next & 0x3f) : undefined;
    }
    if (unichar !== undefined && (unichar <= 0xd7ff || (unichar >= 0xe000 && unichar <= 0xffff))) out.push(unichar);
    at += consumed;
  }
  return out;
}

/** A UTF-8 lead byte's sequence length (0: not a lead byte) and its payload bits, as the stub reads them. */
function sequenceStart(lead: number): [length: number, bits: number] {
  if ((lead & 0x80) === 0) return [1, lead];
  if ((lead & 0xe0) === 0xc0) return [2, lead & 0x1f];
  if ((lead & 0xf0) === 0xe0) return [3, lead & 0x0f];
  if ((lead & 0xf8) === 0xf0) return [4, lead & 0x07];
  if ((lead & 0xfc) === 0xf8) return [5, lead & 0x03];
  if ((lead & 0xfe) === 0xfc) return [6, lead & 0x01];
  return [0, 0];
}

/** util.c mangle_stub_cmdline: whitespace is any unit <= 0x20 and 0x7F. */
function isStubWhitespace(unit: number): boolean {
  return unit <= 0x20 || unit === 0x7f;
}

/**
 * util.c mangle_stub_cmdline: drop leading and trailing whitespace, turn each inner control
 * character into a space (no collapsing). 252's loop skips leading whitespace without stopping at
 * the NUL, so a blank command line makes it read past the string: refused, not predicted.
 */
function mangleStubCmdline(units: readonly number[]): number[] {
  const first = units.findIndex((u) => !isStubWhitespace(u));
  if (first < 0) {
    throw new UkiError('.cmdline', 'is blank; systemd-stub 252 reads past the end of a blank command line');
  }
  let last = units.length - 1;
  while (last > first && isStubWhitespace(units[last] ?? 0)) last--;
  return units.slice(first, last + 1).map((u) => (isStubWhitespace(u) ? 0x20 : u));
}
