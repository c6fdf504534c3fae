import { readFile } from 'node:fs/promises';
import { pemCertificatesToDer } from './pem.js';
import { AttestationConfigError } from './errors.js';

/**
 * Reads a PEM bundle of certificates (pinned EK roots, intermediates): its text and the DER of
 * every certificate. Throws AttestationConfigError naming the file when it cannot be read or holds
 * no certificate; callers add which option or setting named it.
 */
export async function readPemCertificates(path: string): Promise<{ text: string; certificates: Buffer[] }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new AttestationConfigError(`cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    return { text, certificates: pemCertificatesToDer(text) };
  } catch (err) {
    throw new AttestationConfigError(
      `${path} holds no PEM certificate: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
