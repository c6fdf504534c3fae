import { randomBytes } from 'node:crypto';

/** The root of all cluster keys. Never logged; stored with mode 0600. */
export interface MasterSecret {
  key: Buffer;
  salt: Buffer;
}

export const MASTER_KEY_BYTES = 32;
export const MASTER_SALT_BYTES = 32;
const MIN_KEY_BYTES = 16;

/** A fresh master secret. */
export function generateMasterSecret(): MasterSecret {
  return { key: randomBytes(MASTER_KEY_BYTES), salt: randomBytes(MASTER_SALT_BYTES) };
}

/** Throws unless key and salt are long enough to be a master secret (key ≥ 16 bytes, salt ≥ 32). */
export function checkMasterSecret(secret: MasterSecret, source = 'master secret'): MasterSecret {
  if (secret.key.length < MIN_KEY_BYTES)
    throw new RangeError(`${source}: key must be at least ${MIN_KEY_BYTES} bytes, got ${secret.key.length}`);
  if (secret.salt.length < MASTER_SALT_BYTES)
    throw new RangeError(`${source}: salt must be at least ${MASTER_SALT_BYTES} bytes, got ${secret.salt.length}`);
  return secret;
}

/** JSON file form (`constellation-mastersecret.json`): base64 key and salt. */
export function masterSecretToJson(secret: MasterSecret): string {
  return `${JSON.stringify({ key: secret.key.toString('base64'), salt: secret.salt.toString('base64') }, null, 2)}\n`;
}

/** Parses the JSON file form; errors name the field and never echo the value. */
export function masterSecretFromJson(text: string, source = 'master secret file'): MasterSecret {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new RangeError(`${source}: not valid JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null)
    throw new RangeError(`${source}: expected an object with "key" and "salt"`);
  const record = parsed as Record<string, unknown>;
  const field = (name: 'key' | 'salt'): Buffer => {
    const value = record[name];
    if (typeof value !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(value))
      throw new RangeError(`${source}: "${name}" must be base64`);
    return Buffer.from(value, 'base64');
  };
  const extra = Object.keys(record).filter((k) => k !== 'key' && k !== 'salt');
  if (extra.length > 0) throw new RangeError(`${source}: unknown field "${extra[0] ?? ''}"`);
  return checkMasterSecret({ key: field('key'), salt: field('salt') }, source);
}
