/**
 * A file that is not a well-formed, bounded PE/COFF image. The message names the field, where it
 * is and what was expected, so an operator (or a test) can see which byte is wrong.
 */
export class PeImageError extends Error {
  override readonly name = 'PeImageError';
  /** The field that is wrong, as the PE/COFF specification names it ("COFF NumberOfSections"). */
  readonly field: string;
  /** Byte offset of that field in the file, when it has one. */
  readonly offset: number | undefined;

  constructor(field: string, offset: number | undefined, problem: string) {
    super(`PE image: ${field}${offset === undefined ? '' : ` at offset ${offset}`}: ${problem}`);
    this.field = field;
    this.offset = offset;
  }
}

/**
 * A well-formed PE image that is not a Unified Kernel Image we can predict: a section systemd-stub
 * would read differently than its name says, a missing .linux, a kernel the stub would start
 * another way. The message names the section (or image) and the reason.
 */
export class UkiError extends Error {
  override readonly name = 'UkiError';
  /** The UKI section concerned (".cmdline"), when there is one. */
  readonly section: string | undefined;

  constructor(section: string | undefined, problem: string, options?: ErrorOptions) {
    super(`UKI: ${section === undefined ? '' : `${section}: `}${problem}`, options);
    this.section = section;
  }
}
