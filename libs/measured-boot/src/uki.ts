import { UkiError } from './errors.js';
import { loadedSection, readPeImage } from './pe-image.js';
import type { LoadedSection, PeImage, PeReadOptions, PeSection } from './pe-image.js';

/**
 * The sections systemd-stub 252 gives meaning to, in its canonical order (src/fundamental/tpm-pcr.h,
 * enum UnifiedSection): the order in which it measures them into PCR 11.
 */
export const UKI_SECTION_NAMES = [
  '.linux',
  '.osrel',
  '.cmdline',
  '.initrd',
  '.splash',
  '.dtb',
  '.pcrsig',
  '.pcrpkey',
] as const;

export type UkiSectionName = (typeof UKI_SECTION_NAMES)[number];

export interface UkiSection {
  readonly name: UkiSectionName;
  readonly header: PeSection;
  /** What the stub sees at the section's address: VirtualSize bytes, as the firmware loaded them. */
  readonly content: LoadedSection;
}

/** A Unified Kernel Image: a PE image (the stub) carrying the kernel and its data in sections. */
export interface Uki {
  readonly bytes: Uint8Array;
  readonly image: PeImage;
  /** The UKI sections present, in UKI_SECTION_NAMES order. */
  readonly sections: ReadonlyMap<UkiSectionName, UkiSection>;
  /** Every other section (the stub's own code and data), in section table order. */
  readonly otherSections: readonly PeSection[];
}

/**
 * Reads a UKI's sections as systemd-stub 252 finds them (src/boot/efi/pe.c, locate_sections): it
 * compares only the first strlen(name) bytes of each section name, lets a later section override
 * an earlier one, and treats VirtualSize 0 as absent. Where that would make the stub read something
 * other than the one section of exactly that name, the image is refused rather than guessed at.
 */
export function readUki(bytes: Uint8Array, options: PeReadOptions = {}): Uki {
  const image = readPeImage(bytes, options);
  const sections = new Map<UkiSectionName, UkiSection>();
  const otherSections: PeSection[] = [];
  for (const header of image.sections) {
    const name = stubSectionName(header);
    if (name === undefined) {
      otherSections.push(header);
      continue;
    }
    if (sections.has(name)) {
      throw new UkiError(
        name,
        `appears twice (sections ${sections.get(name)?.header.index} and ${header.index}); systemd-stub would use the last`,
      );
    }
    if (header.virtualSize === 0) {
      throw new UkiError(name, `section ${header.index} has VirtualSize 0, which systemd-stub takes for absent`);
    }
    sections.set(name, { name, header, content: loadedSection(bytes, header) });
  }
  if (!sections.has('.linux')) throw new UkiError('.linux', 'missing: systemd-stub has no kernel to start');
  const ordered = new Map(
    UKI_SECTION_NAMES.flatMap((name) => {
      const section = sections.get(name);
      return section === undefined ? [] : [[name, section] as const];
    }),
  );
  return { bytes, image, sections: ordered, otherSections };
}

/** The UKI section name the stub matches this header to, refusing names it would match by prefix only. */
function stubSectionName(header: PeSection): UkiSectionName | undefined {
  for (const name of UKI_SECTION_NAMES) {
    const prefix = Buffer.from(name, 'latin1');
    if (!Buffer.from(header.nameBytes.subarray(0, prefix.length)).equals(prefix)) continue;
    if (header.nameBytes.subarray(prefix.length).some((b) => b !== 0)) {
      throw new UkiError(
        name,
        `section ${header.index} is named ${JSON.stringify(header.name)}; systemd-stub compares only the first ${prefix.length} bytes and would take it for ${name}`,
      );
    }
    return name;
  }
  return undefined;
}
