import { createHash } from 'node:crypto';

/** A PCR bank, by Node's name of its hash. */
export type BankName = 'sha1' | 'sha256' | 'sha384' | 'sha512';

interface BankInfo {
  readonly name: BankName;
  /** TPM_ALG_ID. */
  readonly id: number;
  readonly digestSize: number;
}

const BANKS: readonly BankInfo[] = [
  { name: 'sha1', id: 0x0004, digestSize: 20 },
  { name: 'sha256', id: 0x000b, digestSize: 32 },
  { name: 'sha384', id: 0x000c, digestSize: 48 },
  { name: 'sha512', id: 0x000d, digestSize: 64 },
];

/** The bank a TPM_ALG_ID names, or undefined for algorithms this reader cannot replay. */
export function bankById(id: number): BankInfo | undefined {
  return BANKS.find((b) => b.id === id);
}

/** TPM_ALG_ID and digest size of a bank. */
export function bankInfo(name: BankName): BankInfo {
  const found = BANKS.find((b) => b.name === name);
  if (found === undefined) throw new RangeError(`unknown PCR bank ${name as string}`);
  return found;
}

/** Whether `name` is a bank this library knows. */
export function isBankName(name: string): name is BankName {
  return BANKS.some((b) => b.name === name);
}

/** The hash of `data` in `bank`. */
export function bankDigest(bank: BankName, ...data: readonly Uint8Array[]): Buffer {
  const hash = createHash(bank);
  for (const part of data) hash.update(part);
  return hash.digest();
}

/** "0x000b" for an algorithm ID, the form the TCG specifications use. */
export function algorithmIdText(id: number): string {
  return `0x${id.toString(16).padStart(4, '0')}`;
}
