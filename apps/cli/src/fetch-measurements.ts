import { createHash, createPublicKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isMap, parseDocument } from 'yaml';
import { attestationFileToJson, verifySignedMeasurements } from '@constellation/attestation';
import { UsageError } from '@constellation/command-line';
import { errorMessage } from '@constellation/errors';
import { workspaceFiles, writeWorkspaceFile } from './workspace.js';

/** A measurements file is a few KiB; more is not one. */
const MAX_BYTES = 64 * 1024;

/** An http(s) URL or a file's path: its bytes, bounded in size and time. */
async function fetchBytes(location: string, what: string, timeoutMs: number): Promise<Buffer> {
  if (/^https?:\/\//.test(location)) {
    let response: Response;
    try {
      response = await fetch(location, { signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
    } catch (err) {
      throw new UsageError(`cannot fetch ${what} from ${location}: ${errorMessage(err)}`);
    }
    if (!response.ok) throw new UsageError(`cannot fetch ${what} from ${location}: HTTP ${response.status}`);
    const declared = Number(response.headers.get('content-length') ?? '0');
    if (declared > MAX_BYTES) throw new UsageError(`${what} at ${location} is larger than ${MAX_BYTES} bytes`);
    const bytes = Buffer.from(await response.arrayBuffer());
    if (bytes.length > MAX_BYTES) throw new UsageError(`${what} at ${location} is larger than ${MAX_BYTES} bytes`);
    return bytes;
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(location))
    throw new UsageError(`${what}: ${location} is neither an http(s) URL nor a file's path`);
  const bytes = await readFile(location).catch((err: unknown) => {
    throw new UsageError(`cannot read ${what} at ${location}: ${errorMessage(err)}`);
  });
  if (bytes.length > MAX_BYTES) throw new UsageError(`${what} at ${location} is larger than ${MAX_BYTES} bytes`);
  return bytes;
}

export interface FetchMeasurementsOptions {
  workspace: string;
  /** measurements.json: an http(s) URL or a path. */
  url: string;
  /** Its signature; `<url>.sig` by default. */
  signatureUrl?: string;
  /** The pinned public key (PEM file) the signature must verify against. */
  publicKey: string;
  timeoutMs?: number;
}

/**
 * `constellation config fetch-measurements`: a node image's signed reference measurements, checked
 * against the pinned key before a single value is used, then written into the config's
 * attestation.measurements (and eventPolicy when the file has one), keeping the rest of the file
 * and its comments (which may still be unfinished: `init` checks the whole). Returns what changed.
 */
export async function fetchMeasurements(
  options: FetchMeasurementsOptions,
): Promise<{ pcrs: number[]; keyFingerprint: string; eventPolicy: boolean }> {
  const path = workspaceFiles(options.workspace).config;
  // The rest of the config may still be unfinished (no EK roots yet): only its form is needed here.
  const text = await readFile(path, 'utf8').catch(() => {
    throw new UsageError(`no config at ${path}: run \`constellation config generate\` first`);
  });
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) throw new UsageError(`${path}: not valid YAML: ${doc.errors[0]?.message ?? ''}`);
  const attestation = doc.get('attestation');
  if (!isMap(attestation)) throw new UsageError(`${path}: attestation: expected a mapping`);
  const publicKey = await readFile(options.publicKey, 'utf8').catch((err: unknown) => {
    throw new UsageError(`--public-key: cannot read ${options.publicKey}: ${errorMessage(err)}`);
  });
  const timeoutMs = options.timeoutMs ?? 10_000;
  const signatureUrl = options.signatureUrl ?? `${options.url}.sig`;
  const file = await fetchBytes(options.url, 'the measurements', timeoutMs);
  const signature = await fetchBytes(signatureUrl, 'the signature', timeoutMs);
  let verified;
  try {
    verified = verifySignedMeasurements(file, signature.toString('utf8'), publicKey, options.url);
  } catch (err) {
    // A refusal, not a mistake in the command line: exit 1.
    throw new Error(`refused: ${errorMessage(err)}; ${path} is unchanged`, { cause: err });
  }
  const values = attestationFileToJson(verified.measurements, verified.eventPolicy);
  attestation.set('measurements', doc.createNode(values.measurements));
  if (values.eventPolicy !== undefined) attestation.set('eventPolicy', doc.createNode(values.eventPolicy));
  await writeWorkspaceFile(path, doc.toString(), false);
  const der = createPublicKey(publicKey).export({ type: 'spki', format: 'der' });
  return {
    pcrs: [...verified.measurements.keys()],
    keyFingerprint: `sha256:${createHash('sha256').update(der).digest('hex')}`,
    eventPolicy: values.eventPolicy !== undefined,
  };
}
