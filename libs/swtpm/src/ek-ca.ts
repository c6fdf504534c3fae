import { X509Certificate, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { requireProgram, runProgram } from './programs.js';

/** A per-cluster EK CA that swtpm_localca signs EK and platform certificates with. */
export interface EkCa {
  /** The CA directory (mode 0700); also swtpm_localca's statedir, where it keeps its lock. */
  dir: string;
  /** Self-signed root certificate, PEM: what verifiers pin. */
  rootCertPath: string;
  rootKeyPath: string;
  /** Intermediate certificate (PEM, signed by the root): the issuer of every EK certificate. */
  intermediateCertPath: string;
  intermediateKeyPath: string;
  /** swtpm_localca configuration (statedir, signingkey, issuercert, certserial). */
  localcaConfigPath: string;
  /** swtpm_localca options: the platform certificate's manufacturer, model and version. */
  localcaOptionsPath: string;
  /** The key type of both CA levels, and so how EK certificates are signed. */
  keyAlgorithm: EkCaKeyAlgorithm;
}

/**
 * ECDSA P-384 (SHA-384) is quick to generate, so tests use it. TPM vendors sign RSA EK
 * certificates with RSA CAs (Infineon's "OPTIGA(TM) RSA Manufacturing CA 034" and STMicro's "STM
 * TPM EK Intermediate CA 05" hold RSA-2048 keys and sign with SHA-256), and a verifier checks an
 * RSA signature in a twentieth of the time of a P-384 one: the join storm bench uses RSA-2048.
 */
export type EkCaKeyAlgorithm = 'ecdsa-p384' | 'rsa-2048';

export interface EkCaOptions {
  /** Common-name prefix of the CA certificates. */
  name?: string;
  /** Bound for each openssl run. */
  timeoutMs?: number;
  /** ecdsa-p384 by default. */
  keyAlgorithm?: EkCaKeyAlgorithm;
}

const FILES = {
  rootCert: 'root.pem',
  rootKey: 'root.key',
  intermediateCert: 'intermediate.pem',
  intermediateKey: 'intermediate.key',
  serial: 'certserial',
  config: 'swtpm-localca.conf',
  options: 'swtpm-localca.options',
} as const;

/** The paths of the CA in `dir`, whether or not it exists yet. */
export function ekCaPaths(dir: string, keyAlgorithm: EkCaKeyAlgorithm = 'ecdsa-p384'): EkCa {
  const abs = resolve(dir);
  return {
    dir: abs,
    rootCertPath: join(abs, FILES.rootCert),
    rootKeyPath: join(abs, FILES.rootKey),
    intermediateCertPath: join(abs, FILES.intermediateCert),
    intermediateKeyPath: join(abs, FILES.intermediateKey),
    localcaConfigPath: join(abs, FILES.config),
    localcaOptionsPath: join(abs, FILES.options),
    keyAlgorithm,
  };
}

/** openssl's key and certificate settings both CA levels use. */
const KEY_OPTIONS: Record<EkCaKeyAlgorithm, string[]> = {
  'ecdsa-p384': ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-384', '-sha384', '-nodes'],
  'rsa-2048': ['-newkey', 'rsa:2048', '-sha256', '-nodes'],
};

/** The digest a CA of `keyAlgorithm` signs certificates with (openssl's option). */
export function ekCaDigestOption(keyAlgorithm: EkCaKeyAlgorithm): '-sha384' | '-sha256' {
  return keyAlgorithm === 'rsa-2048' ? '-sha256' : '-sha384';
}
const CA_DAYS = '3650';

/** The self-signed root: CA without a path length limit. */
async function createRoot(openssl: string, ca: EkCa, name: string, timeoutMs: number): Promise<void> {
  await runProgram(
    openssl,
    [
      'req',
      '-x509',
      '-new',
      ...KEY_OPTIONS[ca.keyAlgorithm],
      '-keyout',
      ca.rootKeyPath,
      '-out',
      ca.rootCertPath,
      '-days',
      CA_DAYS,
      '-subj',
      `/CN=${name} EK root CA`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-addext',
      'subjectKeyIdentifier=hash',
    ],
    { timeoutMs },
  );
}

/** The intermediate that signs EK certificates: a CSR signed by the root, path length 0. */
async function createIntermediate(openssl: string, ca: EkCa, name: string, timeoutMs: number): Promise<void> {
  const csr = join(ca.dir, 'intermediate.csr');
  const extensions = join(ca.dir, 'intermediate.ext');
  await runProgram(
    openssl,
    [
      'req',
      '-new',
      ...KEY_OPTIONS[ca.keyAlgorithm],
      '-keyout',
      ca.intermediateKeyPath,
      '-out',
      csr,
      '-subj',
      `/CN=${name} EK CA`,
    ],
    { timeoutMs },
  );
  await writeFile(
    extensions,
    [
      'basicConstraints=critical,CA:TRUE,pathlen:0',
      'keyUsage=critical,keyCertSign,cRLSign',
      'subjectKeyIdentifier=hash',
      'authorityKeyIdentifier=keyid:always',
      '',
    ].join('\n'),
  );
  await runProgram(
    openssl,
    [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      ca.rootCertPath,
      '-CAkey',
      ca.rootKeyPath,
      '-set_serial',
      `0x${randomBytes(16).toString('hex')}`,
      '-days',
      CA_DAYS,
      ekCaDigestOption(ca.keyAlgorithm),
      '-extfile',
      extensions,
      '-out',
      ca.intermediateCertPath,
    ],
    { timeoutMs },
  );
  await rm(csr);
  await rm(extensions);
}

/** swtpm_localca's configuration: sign with the intermediate, serials from a locked file. */
async function writeLocalcaConfig(ca: EkCa): Promise<void> {
  // swtpm_localca takes the next serial from this file under its lock in statedir, so
  // parallel manufacturing against one CA gets distinct serials.
  await writeFile(join(ca.dir, FILES.serial), '1', { mode: 0o600 });
  await writeFile(
    ca.localcaConfigPath,
    [
      `statedir = ${ca.dir}`,
      `signingkey = ${ca.intermediateKeyPath}`,
      `issuercert = ${ca.intermediateCertPath}`,
      `certserial = ${join(ca.dir, FILES.serial)}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  // --create-platform-cert needs all three platform fields.
  await writeFile(
    ca.localcaOptionsPath,
    ['--platform-manufacturer constellation-ts', '--platform-version 1.0', '--platform-model swtpm', ''].join('\n'),
    { mode: 0o600 },
  );
}

/**
 * Creates a root and an intermediate CA (ECDSA P-384 unless asked otherwise, openssl: fast to
 * generate, and certtool signs EK certificates with it) in `dir` and the swtpm_localca
 * configuration that signs with the intermediate. The directory must be empty or missing. We
 * make the keys ourselves rather than letting swtpm_localca create them on first use, so that
 * the root is known before any TPM is manufactured and parallel first uses cannot race.
 */
export async function createEkCa(dir: string, options: EkCaOptions = {}): Promise<EkCa> {
  const ca = ekCaPaths(dir, options.keyAlgorithm);
  const name = options.name ?? 'Constellation';
  const timeoutMs = options.timeoutMs ?? 60_000;
  const openssl = await requireProgram('openssl');
  await mkdir(ca.dir, { recursive: true, mode: 0o700 });
  await chmod(ca.dir, 0o700); // mkdir's mode does not apply to an existing directory
  if ((await readdir(ca.dir)).length > 0) throw new Error(`EK CA directory ${ca.dir} is not empty`);
  await createRoot(openssl, ca, name, timeoutMs);
  await createIntermediate(openssl, ca, name, timeoutMs);
  // openssl writes keys with the umask's mode; the 0700 directory already shields them.
  await chmod(ca.rootKeyPath, 0o600);
  await chmod(ca.intermediateKeyPath, 0o600);
  await writeLocalcaConfig(ca);
  return ca;
}

/** The CA in `dir` created earlier by createEkCa; throws when its files are missing. */
export async function openEkCa(dir: string): Promise<EkCa> {
  const paths = ekCaPaths(dir);
  for (const path of [
    paths.rootCertPath,
    paths.intermediateCertPath,
    paths.intermediateKeyPath,
    paths.localcaConfigPath,
  ]) {
    await stat(path).catch((err: unknown) => {
      throw new Error(`EK CA in ${paths.dir} is incomplete: ${path} is missing`, { cause: err });
    });
  }
  const intermediate = new X509Certificate(await readFile(paths.intermediateCertPath));
  return { ...paths, keyAlgorithm: intermediate.publicKey.asymmetricKeyType === 'rsa' ? 'rsa-2048' : 'ecdsa-p384' };
}
