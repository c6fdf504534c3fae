import { readFile } from 'node:fs/promises';
import type { Logger } from '@constellation/logger';
import { errorMessage } from '@constellation/errors';
import { parseEnvFile, tagToVersion } from './env-file.js';
import { fetchBytes } from './fetch-with-retry.js';
import type { RetryPolicy } from './fetch-with-retry.js';
import { compareKubernetesVersions, parseKubernetesVersion } from './kubernetes-version.js';
import { kubeletSkewProblem } from './version-skew.js';

export type VersionSource = 'forced' | 'request' | 'api-server' | 'seed-file';

/**
 * The minimum when none is configured: the oldest release a new cluster runs (see
 * SUPPORTED_KUBERNETES_MINORS in @constellation/kubeadm). Without it, a silent API server let the
 * seed file name any older release a signed manifest exists for (issue 42).
 */
export const DEFAULT_MINIMUM_KUBERNETES_VERSION = 'v1.35.0';

/** A real /version body is ~500 bytes. */
export const MAX_VERSION_BODY_BYTES = 64 * 1024;

export interface VersionDiscoveryOptions {
  /** `--force-kube-version`: wins over everything. */
  forced?: string;
  /** From the join ticket or the init request. */
  fromRequest?: string;
  /** API server base URL (https); `/version` is asked with bounded retries. */
  apiServerUrl?: string;
  /** PEM of the cluster CA: the only CA trusted for the API server. */
  apiServerCa?: string;
  apiRetry: RetryPolicy;
  /** Local seed (`/etc/kubernetes/installer/kubelet.env`): KUBELET_IMAGE_TAG, `_` meaning `+`. */
  seedFile: string;
  /** Versions older than this are refused, whichever source names them (DEFAULT_MINIMUM_KUBERNETES_VERSION). */
  minimumVersion?: string;
  /** The highest version this node prepared before: an older one is refused, whichever source names it. */
  highestPrepared?: string;
  /** The API server's answer on an earlier run: a seed file older than it is logged as a downgrade risk. */
  apiServerLastAnswer?: string;
  logger: Logger;
}

export interface DiscoveredVersion {
  version: string;
  source: VersionSource;
  /** What the API server answered on this run, when it did. */
  apiServerVersion?: string;
}

/** The Kubernetes version to prepare for, from the first source that has one; logs which source won. */
export async function discoverKubernetesVersion(options: VersionDiscoveryOptions): Promise<DiscoveredVersion> {
  const minimumText = options.minimumVersion ?? DEFAULT_MINIMUM_KUBERNETES_VERSION;
  const minimum = parseKubernetesVersion(minimumText, 'the minimum');
  const highest =
    options.highestPrepared === undefined ? undefined : parseKubernetesVersion(options.highestPrepared, 'the record');
  const reasons: string[] = [];
  const pick = (version: string, source: VersionSource): DiscoveredVersion => {
    const parsed = parseKubernetesVersion(version, source);
    if (compareKubernetesVersions(parsed, minimum) < 0)
      throw new Error(
        `Kubernetes version ${version} from ${source} is older than the minimum ${minimumText} (downgrade refused)`,
      );
    if (highest !== undefined && compareKubernetesVersions(parsed, highest) < 0)
      throw new Error(
        `Kubernetes version ${version} from ${source} is older than ${options.highestPrepared ?? ''}, the highest version this node has prepared (downgrade refused)`,
      );
    options.logger.info('kubernetes version determined', { version, source });
    return { version, source };
  };
  if (options.forced !== undefined && options.forced !== '') {
    return checkedAgainstApiServer(pick(options.forced, 'forced'), options);
  }
  reasons.push('no forced version');
  if (options.fromRequest !== undefined && options.fromRequest !== '') {
    return checkedAgainstApiServer(pick(options.fromRequest, 'request'), options);
  }
  reasons.push('none in the request');
  if (options.apiServerUrl !== undefined) {
    let version: string | undefined;
    try {
      version = await askApiServer(options.apiServerUrl, options.apiServerCa, options.apiRetry);
      if (version === undefined) reasons.push('API server /version has no gitVersion');
    } catch (err) {
      options.logger.warn('API server version unavailable; falling back to the local seed file', {
        error: errorMessage(err),
      });
      reasons.push(`API server: ${errorMessage(err)}`);
    }
    // An answer that is malformed or too old is refused outright, not replaced by the seed.
    if (version !== undefined) return { ...pick(version, 'api-server'), apiServerVersion: version };
  } else {
    reasons.push('no API server configured');
  }
  const seed = await readFile(options.seedFile, 'utf8').then(
    (text) => parseEnvFile(text).get('KUBELET_IMAGE_TAG') ?? '',
    (err: unknown) => new Error(`seed file: ${errorMessage(err)}`),
  );
  if (typeof seed === 'string' && seed !== '') {
    const chosen = pick(tagToVersion(seed), 'seed-file');
    warnIfOlderThanApiServer(chosen.version, options);
    return chosen;
  }
  reasons.push(seed instanceof Error ? seed.message : `${options.seedFile} has no KUBELET_IMAGE_TAG`);
  throw new Error(`unable to determine the Kubernetes version: ${reasons.join('; ')}`);
}

/**
 * A version named outright (forced, or by the request) is the kubelet's: where an API server is
 * configured, it must fit the API server's version under Kubernetes' version-skew policy (not
 * newer, at most three minors older), or the kubelet would be prepared for a cluster it may not
 * join. When the API server does not answer, the version stands, with a warning, as before.
 */
async function checkedAgainstApiServer(
  chosen: DiscoveredVersion,
  options: VersionDiscoveryOptions,
): Promise<DiscoveredVersion> {
  if (options.apiServerUrl === undefined) return chosen;
  let answer: string | undefined;
  try {
    answer = await askApiServer(options.apiServerUrl, options.apiServerCa, options.apiRetry);
  } catch (err) {
    options.logger.warn('API server version unavailable; the kubelet version is not checked against it', {
      error: errorMessage(err),
    });
    return chosen;
  }
  if (answer === undefined) return chosen;
  const problem = kubeletSkewProblem(
    parseKubernetesVersion(chosen.version, chosen.source),
    parseKubernetesVersion(answer, 'api-server'),
  );
  if (problem !== undefined) {
    throw new Error(
      `Kubernetes version ${chosen.version} from ${chosen.source} does not fit the API server's ${answer}: ${problem} (Kubernetes' version-skew policy)`,
    );
  }
  return { ...chosen, apiServerVersion: answer };
}

/**
 * The seed file speaks for the node image, which may be older than the cluster: when the API
 * server answered something newer on an earlier run, preparing the seed's version may downgrade
 * this node. Logged, since the seed is all there is while the API server is silent.
 */
function warnIfOlderThanApiServer(seed: string, options: VersionDiscoveryOptions): void {
  const last = options.apiServerLastAnswer;
  if (last === undefined) return;
  let older: boolean;
  try {
    older =
      compareKubernetesVersions(parseKubernetesVersion(seed, 'seed-file'), parseKubernetesVersion(last, 'the record')) <
      0;
  } catch {
    return;
  }
  if (older)
    options.logger.warn(
      "the seed file's Kubernetes version is older than the API server's last known answer: a downgrade risk",
      { seed, apiServer: last },
    );
}

/** `gitVersion` from `/version`, over https pinned to the cluster CA, with a bounded body. */
async function askApiServer(url: string, ca: string | undefined, retry: RetryPolicy): Promise<string | undefined> {
  if (!url.startsWith('https://')) throw new Error(`${url} is not https; /version is only trusted over TLS`);
  if (ca === undefined) throw new Error('no cluster CA configured to pin the API server to');
  const body = await fetchBytes(`${url.replace(/\/$/, '')}/version`, retry, { maxBytes: MAX_VERSION_BODY_BYTES, ca });
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    throw new Error('/version is not JSON');
  }
  const gitVersion = (json as { gitVersion?: unknown } | null)?.gitVersion;
  return typeof gitVersion === 'string' ? gitVersion : undefined;
}
