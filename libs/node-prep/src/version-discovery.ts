import { readFile } from 'node:fs/promises';
import type { Logger } from '@constellation/logger';
import { parseEnvFile, tagToVersion } from './env-file.js';
import { fetchBytes } from './fetch-with-retry.js';
import type { RetryPolicy } from './fetch-with-retry.js';
import { errorMessage } from '@constellation/errors';

export type VersionSource = 'forced' | 'request' | 'api-server' | 'seed-file';

export interface VersionDiscoveryOptions {
  /** `--force-kube-version`: wins over everything. */
  forced?: string;
  /** From the join ticket or the init request. */
  fromRequest?: string;
  /** API server base URL; `/version` is asked with bounded retries. */
  apiServerUrl?: string;
  apiRetry: RetryPolicy;
  /** Local seed (`/etc/kubernetes/installer/kubelet.env`): KUBELET_IMAGE_TAG, `_` meaning `+`. */
  seedFile: string;
  logger: Logger;
}

const VERSION = /^v\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]+)?$/;

/** The Kubernetes version to prepare for, from the first source that has one; logs which source won. */
export async function discoverKubernetesVersion(
  options: VersionDiscoveryOptions,
): Promise<{ version: string; source: VersionSource }> {
  const reasons: string[] = [];
  const pick = (version: string, source: VersionSource): { version: string; source: VersionSource } => {
    if (!VERSION.test(version))
      throw new Error(`Kubernetes version "${version}" from ${source} does not look like v1.32.9`);
    options.logger.info('kubernetes version determined', { version, source });
    return { version, source };
  };
  if (options.forced !== undefined && options.forced !== '') return pick(options.forced, 'forced');
  reasons.push('no forced version');
  if (options.fromRequest !== undefined && options.fromRequest !== '') return pick(options.fromRequest, 'request');
  reasons.push('none in the request');
  if (options.apiServerUrl !== undefined) {
    try {
      const body = JSON.parse(
        (await fetchBytes(`${options.apiServerUrl.replace(/\/$/, '')}/version`, options.apiRetry)).toString(),
      ) as { gitVersion?: unknown };
      if (typeof body.gitVersion === 'string') return pick(body.gitVersion, 'api-server');
      reasons.push('API server /version has no gitVersion');
    } catch (err) {
      options.logger.warn('API server version unavailable; falling back to the local seed file', {
        error: errorMessage(err),
      });
      reasons.push(`API server: ${errorMessage(err)}`);
    }
  } else {
    reasons.push('no API server configured');
  }
  try {
    const tag = parseEnvFile(await readFile(options.seedFile, 'utf8')).get('KUBELET_IMAGE_TAG');
    if (tag !== undefined && tag !== '') return pick(tagToVersion(tag), 'seed-file');
    reasons.push(`${options.seedFile} has no KUBELET_IMAGE_TAG`);
  } catch (err) {
    reasons.push(`seed file: ${errorMessage(err)}`);
  }
  throw new Error(`unable to determine the Kubernetes version: ${reasons.join('; ')}`);
}
