import { createHash, X509Certificate } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { EkCa } from './ek-ca.js';
import { requireProgram, runProgram } from './programs.js';

export interface ManufactureOptions {
  /** swtpm state directory (created when missing; existing state is overwritten). */
  stateDir: string;
  /** Becomes the EK certificates' subject CN (swtpm_setup --vmid), e.g. the node name. */
  vmid: string;
  ca: EkCa;
  /** Where swtpm_setup writes copies of the EK certificates; `<stateDir>/ek-certs` by default. */
  certDir?: string;
  /** Bound for swtpm_setup (which generates RSA and ECC EKs and runs swtpm_localca twice). */
  timeoutMs?: number;
}

export interface ManufacturedTpm {
  stateDir: string;
  /** The RSA-2048 EK certificate, DER (ek-rsa2048.crt); the same bytes are in NV 0x01c00002. */
  ekRsaCertDerPath: string;
  /** The ECC P-384 EK certificate, DER (ek-secp384r1.crt); the same bytes are in NV 0x01c00016. */
  ekEccCertDerPath: string;
  /** SHA-256 of the RSA EK's SubjectPublicKeyInfo (DER), lower-case hex: what the platform registers. */
  ekPublicKeyHash: string;
}

/**
 * Manufactures a TPM like a vendor would: swtpm_setup creates the EKs, has swtpm_localca
 * certify them (and a platform certificate) with `ca`, writes the certificates to their TCG NV
 * indexes and locks NV. Takes about a second (RSA key generation), so manufacture in parallel.
 */
export async function manufactureTpm(options: ManufactureOptions): Promise<ManufacturedTpm> {
  const stateDir = resolve(options.stateDir);
  const certDir = resolve(options.certDir ?? join(stateDir, 'ek-certs'));
  const [swtpmSetup, localca] = await Promise.all([requireProgram('swtpm_setup'), requireProgram('swtpm_localca')]);
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  await mkdir(certDir, { recursive: true, mode: 0o700 });
  const config = join(certDir, 'swtpm_setup.conf');
  await writeFile(
    config,
    [
      `create_certs_tool = ${localca}`,
      `create_certs_tool_config = ${options.ca.localcaConfigPath}`,
      `create_certs_tool_options = ${options.ca.localcaOptionsPath}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  await runProgram(
    swtpmSetup,
    [
      '--tpm2',
      '--tpmstate',
      stateDir,
      '--create-ek-cert',
      '--create-platform-cert',
      '--lock-nvram',
      '--vmid',
      options.vmid,
      '--config',
      config,
      '--write-ek-cert-files',
      certDir,
      '--overwrite',
    ],
    // swtpm_setup reads defaults from $XDG_CONFIG_HOME unless told otherwise; --config covers it.
    { timeoutMs: options.timeoutMs ?? 60_000 },
  );
  const ekRsaCertDerPath = join(certDir, 'ek-rsa2048.crt');
  const ekEccCertDerPath = join(certDir, 'ek-secp384r1.crt');
  const rsaCert = new X509Certificate(await readFile(ekRsaCertDerPath));
  return { stateDir, ekRsaCertDerPath, ekEccCertDerPath, ekPublicKeyHash: spkiSha256(rsaCert) };
}

/** SHA-256 of a certificate's SubjectPublicKeyInfo DER, lower-case hex. */
export function spkiSha256(cert: X509Certificate): string {
  const spki = cert.publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(spki).digest('hex');
}
