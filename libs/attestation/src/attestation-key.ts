import { TPM_ALG, TPM_ECC, TPMA_OBJECT, akTemplate, parsePublic } from '@constellation/tpm';
import type { SchemeDefinition, SymmetricDefinition, TpmPublic } from '@constellation/tpm';
import { AttestationError } from './errors.js';
import { errorMessage } from '@constellation/errors';

/** Attributes every attestation key must have: a TPM-resident key that only signs TPM-made structures. */
const REQUIRED_AK_ATTRIBUTES =
  TPMA_OBJECT.fixedTPM |
  TPMA_OBJECT.fixedParent |
  TPMA_OBJECT.sensitiveDataOrigin |
  TPMA_OBJECT.restricted |
  TPMA_OBJECT.sign;

/**
 * Parses an attestation key's public area and checks its shape: restricted signing key (never
 * decrypt), SHA-256 name and signatures, ECDSA P-256 or RSA of at least 2048 bits; and then that
 * it is our AK template exactly, apart from the key itself (see `templateDifferences`).
 */
export function checkAttestationKey(bytes: Uint8Array): TpmPublic {
  let ak: TpmPublic;
  try {
    ak = parsePublic(bytes);
  } catch (err) {
    throw new AttestationError('attestation-key', `attestation key public area is malformed: ${errorMessage(err)}`);
  }
  if (
    (ak.objectAttributes & REQUIRED_AK_ATTRIBUTES) !== REQUIRED_AK_ATTRIBUTES ||
    (ak.objectAttributes & TPMA_OBJECT.decrypt) !== 0
  ) {
    throw new AttestationError(
      'attestation-key',
      'attestation key is not a restricted, TPM-resident signing key (fixedTPM, fixedParent, sensitiveDataOrigin, restricted, sign; not decrypt)',
    );
  }
  if (ak.nameAlg !== TPM_ALG.SHA256)
    throw new AttestationError('weak-hash', 'attestation key name algorithm must be SHA-256');
  if (ak.type === 'ecc') {
    if (ak.curve !== TPM_ECC.NIST_P256 || ak.scheme.scheme !== TPM_ALG.ECDSA) {
      throw new AttestationError('attestation-key', 'ECC attestation key must be NIST P-256 with the ECDSA scheme');
    }
  } else if (ak.keyBits < 2048 || (ak.scheme.scheme !== TPM_ALG.RSASSA && ak.scheme.scheme !== TPM_ALG.RSAPSS)) {
    throw new AttestationError(
      'attestation-key',
      'RSA attestation key must have at least 2048 bits and an RSASSA or RSAPSS scheme',
    );
  }
  if (ak.scheme.hash !== TPM_ALG.SHA256)
    throw new AttestationError('weak-hash', 'attestation key must sign with SHA-256');
  const differences = templateDifferences(ak);
  if (differences.length > 0) {
    throw new AttestationError(
      'attestation-key',
      `attestation key is not our AK template apart from its key: ${differences.join('; ')}`,
    );
  }
  return ak;
}

const ATTRIBUTE_NAMES = Object.entries(TPMA_OBJECT) as [keyof typeof TPMA_OBJECT, number][];

/**
 * How `ak` differs from `akTemplate` of its type, the key itself (unique) aside. A key administered
 * by policy (adminWithPolicy, an authPolicy) could be a software key that claims fixedTPM: before,
 * only the TPM's own refusal to load such a key for ActivateCredential stopped it (issue 42).
 * Nodes make their AK from this template, so nothing else is ever needed.
 */
function templateDifferences(ak: TpmPublic): string[] {
  const template = akTemplate(ak.type);
  const differences: string[] = [];
  if (ak.objectAttributes !== template.objectAttributes) {
    const changed = ATTRIBUTE_NAMES.flatMap(([name, bit]) => {
      const has = (ak.objectAttributes & bit) !== 0;
      if (has === ((template.objectAttributes & bit) !== 0)) return [];
      return [`${name} ${has ? 'set' : 'missing'}`];
    });
    const known = ATTRIBUTE_NAMES.reduce((all, [, bit]) => all | bit, 0);
    const unknown = ak.objectAttributes & ~known;
    if (unknown !== 0) changed.push(`unknown bits 0x${(unknown >>> 0).toString(16)} set`);
    differences.push(`attributes differ from the AK template: ${changed.join(', ')}`);
  }
  if (ak.authPolicy.length !== 0)
    differences.push(`attestation key has an authPolicy of ${ak.authPolicy.length} bytes; the AK template's is empty`);
  if (!sameSymmetric(ak.symmetric, template.symmetric))
    differences.push("symmetric algorithm differs from the AK template's (none)");
  if (!sameScheme(ak.scheme, template.scheme)) differences.push("signing scheme differs from the AK template's");
  if (ak.type === 'ecc' && template.type === 'ecc') {
    if (!sameScheme(ak.kdf, template.kdf)) differences.push("KDF differs from the AK template's (none)");
  } else if (ak.type === 'rsa' && template.type === 'rsa') {
    if (ak.keyBits !== template.keyBits)
      differences.push(`${ak.keyBits}-bit RSA key; the AK template's is ${template.keyBits}`);
    if (ak.exponent !== template.exponent)
      differences.push("RSA exponent differs from the AK template's (the default, 65537)");
  }
  return differences;
}

const sameScheme = (a: SchemeDefinition, b: SchemeDefinition): boolean => a.scheme === b.scheme && a.hash === b.hash;

const sameSymmetric = (a: SymmetricDefinition, b: SymmetricDefinition): boolean =>
  a.algorithm === b.algorithm && a.keyBits === b.keyBits && a.mode === b.mode;
