import { basename } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '@constellation/files';
import { parseKubernetesVersion } from './kubernetes-version.js';
import { ensureDirectoryInsideRoot } from './root-paths.js';
import { readTrustedFile } from './trusted-file.js';

export const DEFAULT_VERSION_RECORD_PATH = '/var/lib/constellation/node-prep/kubernetes-versions.json';

/**
 * What this node knows of Kubernetes versions across runs: the highest it prepared from a verified
 * manifest (it never prepares an older one), and the API server's last answer to /version (a seed
 * file older than it is a downgrade risk, logged when the API server is silent).
 */
export interface VersionRecord {
  highestPrepared?: string;
  apiServerLastAnswer?: string;
}

const version = z.string().refine((text) => {
  try {
    parseKubernetesVersion(text, 'the record');
    return true;
  } catch {
    return false;
  }
}, 'not a Kubernetes version');

const recordSchema = z.strictObject({
  highestPrepared: version.optional(),
  apiServerLastAnswer: version.optional(),
});

async function recordFile(root: string, path: string): Promise<string> {
  const dir = await ensureDirectoryInsideRoot(root, path.slice(0, path.length - basename(path).length));
  return `${dir}/${basename(path)}`;
}

/** The record, empty if there is none yet. A damaged record is an error, never a fresh start. */
export async function readVersionRecord(root: string, path: string): Promise<VersionRecord> {
  const bytes = await readTrustedFile(await recordFile(root, path), 'Kubernetes version record', 4096, 'allow');
  if (bytes === undefined) return {};
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    json = undefined;
  }
  const parsed = recordSchema.safeParse(json);
  if (!parsed.success)
    throw new Error(`Kubernetes version record ${path} is damaged: expected {"highestPrepared": "v1.37.2", …}`);
  return {
    ...(parsed.data.highestPrepared === undefined ? {} : { highestPrepared: parsed.data.highestPrepared }),
    ...(parsed.data.apiServerLastAnswer === undefined ? {} : { apiServerLastAnswer: parsed.data.apiServerLastAnswer }),
  };
}

/** Writes the record (atomically, 0644). */
export async function writeVersionRecord(root: string, path: string, record: VersionRecord): Promise<void> {
  await writeFileAtomic(await recordFile(root, path), `${JSON.stringify(record)}\n`, { mode: 0o644 });
}
