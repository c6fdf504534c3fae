import { TPM_ALG } from './constants.js';
import { TpmParseError } from './errors.js';

export type HashName = 'sha1' | 'sha256' | 'sha384' | 'sha512';

const BY_ID = new Map<number, { name: HashName; size: number }>([
  [TPM_ALG.SHA1, { name: 'sha1', size: 20 }],
  [TPM_ALG.SHA256, { name: 'sha256', size: 32 }],
  [TPM_ALG.SHA384, { name: 'sha384', size: 48 }],
  [TPM_ALG.SHA512, { name: 'sha512', size: 64 }],
]);

const BY_NAME = new Map<HashName, number>([...BY_ID].map(([id, { name }]) => [name, id]));

/** Node's name and digest size of a TPM hash algorithm; throws for anything else. */
export function hashAlgorithm(id: number): { name: HashName; size: number } {
  const found = BY_ID.get(id);
  if (found === undefined) throw new TpmParseError(`unsupported hash algorithm 0x${id.toString(16).padStart(4, '0')}`);
  return found;
}

/** TPM_ALG_ID of a hash by Node name. */
export function hashAlgorithmId(name: HashName): number {
  const id = BY_NAME.get(name);
  if (id === undefined) throw new RangeError(`unsupported hash algorithm ${name}`);
  return id;
}

/** Whether `id` is a hash algorithm this client knows. */
export function isKnownHashAlgorithm(id: number): boolean {
  return BY_ID.has(id);
}
