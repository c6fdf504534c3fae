import { createHash } from 'node:crypto';
import { separatorData } from '@constellation/eventlog';
import { authenticodeDigest } from './authenticode.js';
import { PeImageError, UkiError } from './errors.js';
import { stubLoadOptions } from './load-options.js';
import { loadedSectionBytes, readPeImage } from './pe-image.js';
import type { LoadedSection, PeImage, PeReadOptions } from './pe-image.js';
import { predictedPcr, sha256 } from './predicted-pcr.js';
import type { ExpectedEvent, PredictedPcr } from './predicted-pcr.js';
import { readUki } from './uki.js';
import type { Uki, UkiSectionName } from './uki.js';

// What a boot of a UKI (Debian 12's systemd-stub 252 with a Linux >= 6.1 kernel) by OVMF, as
// \EFI\BOOT\BOOTX64.EFI from a boot option the firmware created itself, extends into PCRs 4, 9
// and 11, computed from the image alone. Assumed, because the image cannot say: no other boot
// option ran first, and the ESP carries no credentials or system extensions for the stub to add
// to the initrd (\loader\credentials\*.cred, <uki>.extra.d\*.cred|*.raw).

const CALLING_EFI_APPLICATION = 'Calling EFI Application from Boot Option';
const IMAGE_SUBSYSTEM_EFI_APPLICATION = 10;
const IMAGE_FILE_MACHINE_AMD64 = 0x8664;

export interface PredictUkiBootOptions extends PeReadOptions {
  /**
   * Whether the firmware runs with UEFI Secure Boot on (default false). systemd-stub 252 then
   * overrides the firmware's security protocols while it loads the kernel (linux.c,
   * install_security_override), so the firmware neither checks nor measures the kernel: PCR 4
   * has no event for it. With Secure Boot off the override is not installed.
   */
  readonly secureBoot?: boolean;
}

export interface UkiBootPrediction {
  readonly bank: 'sha256';
  readonly pcrs: { readonly 4: PredictedPcr; readonly 9: PredictedPcr; readonly 11: PredictedPcr };
  /** The kernel command line as the kernel receives it (undefined without a .cmdline section). */
  readonly kernelCommandLine: string | undefined;
}

/** PCRs 4, 9 and 11 after booting this UKI, up to (not including) systemd-pcrphase's extends. */
export function predictUkiBoot(ukiBytes: Uint8Array, options: PredictUkiBootOptions = {}): UkiBootPrediction {
  const uki = readUki(ukiBytes, options);
  const linux = section(uki, '.linux');
  const kernelBytes = loadedSectionBytes(linux);
  const kernel = readKernel(kernelBytes, options);
  requireEfiApplication('the UKI', uki.image);
  requireEfiApplication('the kernel in .linux', kernel);
  if (kernel.majorImageVersion < 1 || kernel.machine !== IMAGE_FILE_MACHINE_AMD64) {
    // pe.c pe_kernel_info: such a kernel is started through the EFI handover protocol instead,
    // which neither LoadImage()s it (no PCR 4 event) nor passes LoadOptions and the initrd the
    // way the kernel measures them into PCR 9.
    throw new UkiError(
      '.linux',
      `kernel has MajorImageVersion ${kernel.majorImageVersion} and Machine 0x${kernel.machine.toString(16)}; ` +
        'systemd-stub 252 starts only an x86-64 kernel with MajorImageVersion >= 1 through LoadImage',
    );
  }

  const pcr4: ExpectedEvent[] = [
    {
      pcr: 4,
      type: 'EV_EFI_ACTION',
      // The ASCII text without a NUL, both as data and as what is hashed.
      digest: sha256(Buffer.from(CALLING_EFI_APPLICATION, 'latin1')),
      eventData: Buffer.from(CALLING_EFI_APPLICATION, 'latin1'),
      measuredBy: 'firmware',
      description: `firmware: "${CALLING_EFI_APPLICATION}" (boot manager, before starting the boot option)`,
    },
    {
      pcr: 4,
      type: 'EV_SEPARATOR',
      // Four zero bytes, the separator of a boot without errors.
      digest: sha256(separatorData()),
      eventData: separatorData(),
      measuredBy: 'firmware',
      description: 'firmware: separator (end of the pre-OS measurements into PCRs 0-7)',
    },
    {
      pcr: 4,
      type: 'EV_EFI_BOOT_SERVICES_APPLICATION',
      // Authenticode of the file; the data (an UEFI_IMAGE_LOAD_EVENT) holds load addresses.
      digest: authenticodeDigest(ukiBytes, options),
      eventData: null,
      measuredBy: 'firmware',
      description: 'firmware: Authenticode SHA-256 of the UKI (\\EFI\\BOOT\\BOOTX64.EFI)',
    },
  ];
  if (options.secureBoot !== true) {
    pcr4.push({
      pcr: 4,
      type: 'EV_EFI_BOOT_SERVICES_APPLICATION',
      // Authenticode of the buffer systemd-stub passes to LoadImage(): .linux as loaded.
      digest: authenticodeDigest(kernelBytes, options),
      eventData: null,
      measuredBy: 'firmware',
      description: `firmware: Authenticode SHA-256 of the kernel in .linux (${linux.length} bytes, LoadImage() by systemd-stub)`,
    });
  }

  return {
    bank: 'sha256',
    pcrs: { 4: predictedPcr(4, pcr4), 9: predictPcr9(uki), 11: predictPcr11(uki) },
    kernelCommandLine: uki.sections.has('.cmdline') ? stubLoadOptions(section(uki, '.cmdline')).text : undefined,
  };
}

/**
 * systemd-stub 252 (stub.c): for each UKI section present but .pcrsig, in UKI_SECTION_NAMES order,
 * an EV_IPL of the section name with its NUL, then one of the section's VirtualSize bytes; both
 * events' data is the name in UTF-16 with its NUL.
 */
function predictPcr11(uki: Uki): PredictedPcr {
  const events: ExpectedEvent[] = [];
  for (const [name, entry] of uki.sections) {
    if (name === '.pcrsig') continue; // it signs PCR 11's value, so it is not measured into it
    const eventData = Buffer.from(`${name}\0`, 'utf16le');
    events.push({
      pcr: 11,
      type: 'EV_IPL',
      // The ASCII name plus its NUL byte (strsize8), not the UTF-16 of the event data.
      digest: sha256(Buffer.from(`${name}\0`, 'latin1')),
      eventData,
      measuredBy: 'systemd-stub',
      description: `systemd-stub: section name ${name}`,
    });
    events.push({
      pcr: 11,
      type: 'EV_IPL',
      // The section's bytes at its address, VirtualSize of them (raw data trimmed or zero filled).
      digest: hashLoaded(entry.content),
      eventData,
      measuredBy: 'systemd-stub',
      description: `systemd-stub: content of ${name} (${entry.content.length} bytes)`,
    });
  }
  return predictedPcr(11, events);
}

/**
 * The kernel's EFI stub (drivers/firmware/efi/libstub/efi-stub-helper.c, Linux >= 6.1): first
 * efi_convert_cmdline measures LoadOptions, then efi_load_initrd the initrd it read through the
 * LINUX_EFI_INITRD_MEDIA_GUID LoadFile2 protocol systemd-stub installs; each an EV_EVENT_TAG into
 * PCR 9 via HashLogExtendEvent, whose digest is over the buffer alone.
 */
function predictPcr9(uki: Uki): PredictedPcr {
  for (const name of ['.pcrsig', '.pcrpkey'] as const) {
    if (uki.sections.has(name)) {
      // stub.c wraps these in cpio archives appended to the initrd; we do not reproduce those bytes.
      throw new UkiError(name, 'makes systemd-stub append a generated cpio to the initrd; PCR 9 is not predicted');
    }
  }
  const events: ExpectedEvent[] = [];
  if (uki.sections.has('.cmdline')) {
    const loadOptions = stubLoadOptions(section(uki, '.cmdline'));
    events.push({
      pcr: 9,
      type: 'EV_EVENT_TAG',
      // LoadOptionsSize bytes of LoadOptions: the command line in UTF-16LE and its UTF-16 NUL.
      digest: sha256(loadOptions.bytes),
      // Tagged event "LOADED_IMAGE::LoadOptions" (id 0x8F3B22ED); its data layout varies by kernel release.
      eventData: null,
      measuredBy: 'linux-efi-stub',
      description: `Linux EFI stub: LOADED_IMAGE::LoadOptions, the command line ${JSON.stringify(loadOptions.text)} in UTF-16LE with its NUL`,
    });
  }
  if (uki.sections.has('.initrd')) {
    const initrd = section(uki, '.initrd');
    events.push({
      pcr: 9,
      type: 'EV_EVENT_TAG',
      // The initrd's bytes as served by the stub: .initrd's VirtualSize bytes, nothing appended.
      digest: hashLoaded(initrd),
      // Tagged event "Linux initrd" (id 0x8F3B22EC); its data layout varies by kernel release.
      eventData: null,
      measuredBy: 'linux-efi-stub',
      description: `Linux EFI stub: Linux initrd (${initrd.length} bytes)`,
    });
  }
  return predictedPcr(9, events);
}

function section(uki: Uki, name: UkiSectionName): LoadedSection {
  const found = uki.sections.get(name);
  if (found === undefined) throw new UkiError(name, 'missing');
  return found.content;
}

function readKernel(bytes: Uint8Array, options: PeReadOptions): PeImage {
  try {
    return readPeImage(bytes, options);
  } catch (err) {
    if (err instanceof PeImageError) {
      throw new UkiError('.linux', `the kernel is not a PE image the firmware would load: ${err.message}`, {
        cause: err,
      });
    }
    throw err;
  }
}

/** EDK2 measures EFI applications as EV_EFI_BOOT_SERVICES_APPLICATION into PCR 4; drivers elsewhere. */
function requireEfiApplication(what: string, image: PeImage): void {
  if (image.subsystem !== IMAGE_SUBSYSTEM_EFI_APPLICATION) {
    throw new UkiError(undefined, `${what} has Subsystem ${image.subsystem}, not 10 (EFI application)`);
  }
}

/** SHA-256 of a loaded section without materializing its zero fill. */
function hashLoaded(content: LoadedSection): Buffer {
  const hash = createHash('sha256').update(content.fileBytes);
  const zeros = Buffer.alloc(Math.min(content.zeroFill, 1024 * 1024));
  for (let left = content.zeroFill; left > 0; left -= zeros.length) {
    hash.update(left >= zeros.length ? zeros : zeros.subarray(0, left));
  }
  return hash.digest();
}
