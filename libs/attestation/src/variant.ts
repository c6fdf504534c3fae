import { AttestationConfigError } from './errors.js';

export type VariantName = 'qemu-vtpm' | 'dummy';

/** An attestation variant: what produces the evidence and how it is checked. */
export interface Variant {
  name: VariantName;
  /** Object identifier of the aTLS certificate extension that carries this variant's documents. */
  oid: string;
  /** Test-only variants prove nothing and are never accepted from production configuration. */
  testOnly: boolean;
  description: string;
}

/** The variants this project knows. OIDs are Constellation's, so tooling recognises them. */
export const VARIANTS: readonly Variant[] = [
  {
    name: 'qemu-vtpm',
    oid: '1.3.9900.5.1',
    testOnly: false,
    description: 'virtual TPM 2.0 (QEMU or swtpm): quote over SHA-256 PCRs signed by an attestation key',
  },
  {
    name: 'dummy',
    oid: '1.3.9900.1',
    testOnly: true,
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

/** The variant whose certificate extension has this OID, if any. */
export function variantByOid(oid: string): Variant | undefined {
  return VARIANTS.find((v) => v.oid === oid);
}
