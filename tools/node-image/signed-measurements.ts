// The image's reference measurements, computed from its UKI (libs/measured-boot) and signed with
// the publisher's key: measurements.json, measurements.json.sig (cosign sign-blob's form) and the
// public key to pin, measurements.pub. `constellation config fetch-measurements` checks them.
import { createPublicKey } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { createMeasurementsSigningKey, signMeasurements } from '@constellation/attestation';
import { imageReferenceValues, referenceAttestationFile } from '@constellation/measured-boot';
import { progress } from './progress.js';

/** This machine's signing key when none is given: created once, owner-only, never in the image. */
export const DEFAULT_SIGNING_KEY = join(homedir(), '.config', 'constellation', 'node-image-signing-key.pem');

async function signingKey(path: string): Promise<string> {
  const existing = await readFile(path, 'utf8').catch(() => undefined);
  if (existing !== undefined) return existing;
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const { privateKey } = createMeasurementsSigningKey();
  await writeFile(path, privateKey, { mode: 0o600, flag: 'wx' });
  await chmod(path, 0o600);
  progress(`created a signing key for the image's measurements at ${path} (keep it private; publish measurements.pub)`);
  return privateKey;
}

/** Writes measurements.json, its signature and the public key into the image directory. */
export async function writeSignedMeasurements(imageDir: string, keyPath: string): Promise<void> {
  const values = imageReferenceValues(await readFile(join(imageDir, 'uki.efi')));
  const file = Buffer.from(`${JSON.stringify(referenceAttestationFile(values), null, 2)}\n`);
  const privateKey = await signingKey(keyPath);
  await writeFile(join(imageDir, 'measurements.json'), file);
  await writeFile(join(imageDir, 'measurements.json.sig'), signMeasurements(file, privateKey));
  const publicKey = createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString();
  await writeFile(join(imageDir, 'measurements.pub'), publicKey);
}
