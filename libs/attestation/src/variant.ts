import { AttestationConfigError } from './errors.js';

export type VariantName = 'tpm2-ek' | 'qemu-vtpm' | 'dummy';

/** An attestation variant: what produces the evidence and how it is checked. */
export interface Variant {
  name: VariantName;
  /** Object identifier of the aTLS certificate extension that carries this variant's documents. */
  oid: string;
  /** Test-only variants prove nothing and are never accepted from production configuration. */
  testOnly: boolean;
  /**
   * Whether the attestation key is rooted in a certified endorsement key (EK certificate chain to
   * a pinned root, then credential activation). Unrooted variants trust whatever key signs.
   */
  rooted: boolean;
  description: string;
}

/** The variants this project knows. OIDs are Constellation's, so tooling recognises them. */
export const VARIANTS: readonly Variant[] = [
  {
    name: 'tpm2-ek',
    // Our own variant, so it gets its own arc next to Constellation's.
    oid: '1.3.9900.5.100',
    testOnly: false,
    rooted: true,
    description:
      'TPM 2.0 whose endorsement key is certified by a pinned CA: EK certificate path validation, credential activation of the attestation key, then the SHA-256 PCR quote',
  },
  {
    name: 'qemu-vtpm',
    oid: '1.3.9900.5.1',
    testOnly: false,
    rooted: false,
    description: 'virtual TPM 2.0 (QEMU or swtpm): quote over SHA-256 PCRs signed by an attestation key',
  },
  {
    name: 'dummy',
    oid: '1.3.9900.1',
    testOnly: true,
    rooted: false,
    description: 'no evidence at all; only for unit tests',
  },
];

/**
 * Looks a variant up by name. Test-only variants are refused unless `allowTestOnly` is set,
 * which only test code does; configuration parsing never sets it.
 */
export function variantByName(name: string, options: { allowTestOnly?: boolean } = {}): Variant {
  const variant = VARIANTS.find((v) => v.name === name);
  const selectable = VARIANTS.filter((v) => options.allowTestOnly === true || !v.testOnly).map((v) => v.name);
  if (variant === undefined) {
    throw new AttestationConfigError(
      `unknown attestation variant "${name}"; expected one of: ${selectable.join(', ')}`,
    );
  }
  if (variant.testOnly && options.allowTestOnly !== true) {
    throw new AttestationConfigError(
      `attestation variant "${name}" is for tests only and proves nothing; expected one of: ${selectable.join(', ')}`,
    );
  }
  return variant;
}

/** The warning every validation under an unrooted variant logs: its evidence proves no machine identity. */
export function unrootedVariantWarning(variant: Variant): string {
  return `attestation variant "${variant.name}" trusts any attestation key: anyone who knows the expected PCR values can pass it without a TPM; use "tpm2-ek" wherever the TPM has an EK certificate`;
}

/** The variant whose certificate extension has this OID, if any. */
export function variantByOid(oid: string): Variant | undefined {
  return VARIANTS.find((v) => v.oid === oid);
}
