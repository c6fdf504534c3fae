import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { writeFileAtomic } from '@constellation/files';
import type { Logger } from '@constellation/logger';
import { errorMessage } from '@constellation/errors';
import { parseComponentManifest } from './component-manifest.js';
import type { ComponentManifest } from './component-manifest.js';
import { installComponents } from './component-installer.js';
import { KUBELET_ENV_KEYS, parseEnvFile, serializeEnvFile, versionToTag } from './env-file.js';
import { fetchBytes } from './fetch-with-retry.js';
import type { RetryPolicy } from './fetch-with-retry.js';
import { DEFAULT_INSTALL_DIRS } from './install-policy.js';
import { readKeyring } from './keyring.js';
import { checkManifestApplies } from './manifest-policy.js';
import { runOsUpdateHook } from './os-update-hook.js';
import { readOsInfo } from './os-release.js';
import type { OsInfo } from './os-release.js';
import { ensureDirectoryInsideRoot } from './root-paths.js';
import { readHighestSerial, recordHighestSerial } from './serial-record.js';
import { verifyDetachedSignature } from './signature.js';
import { readTrustedFile } from './trusted-file.js';
import { renderUrlTemplate } from './url-template.js';
import { shownUrl } from './shown-url.js';
import { discoverKubernetesVersion } from './version-discovery.js';
import type { VersionSource } from './version-discovery.js';
import { compareKubernetesVersions, parseKubernetesVersion } from './kubernetes-version.js';
import { DEFAULT_VERSION_RECORD_PATH, readVersionRecord, writeVersionRecord } from './version-record.js';
import type { VersionRecord } from './version-record.js';

/** Bounds for what node preparation reads before it trusts it. */
export const MAX_MANIFEST_BYTES = 1024 * 1024;
export const MAX_SIGNATURE_BYTES = 64 * 1024;
export const MAX_KEYRING_BYTES = 1024 * 1024;

export const DEFAULT_SERIAL_PATH = '/var/lib/constellation/node-prep/highest-manifest-serial';

export interface NodePreparationOptions {
  /** Every path below is inside this root (`/` on a node). */
  root: string;
  osReleasePath: string;
  forcedVersion?: string;
  requestVersion?: string;
  /** API server base URL; https only, pinned to `apiServerCaPath`. */
  apiServerUrl?: string;
  /** PEM of the cluster CA (a path inside root). */
  apiServerCaPath?: string;
  /** Versions older than this are refused from every source (default DEFAULT_MINIMUM_KUBERNETES_VERSION). */
  minimumVersion?: string;
  /** Local seed and kubelet.env template (`/etc/kubernetes/installer/kubelet.env`). */
  seedFile: string;
  /** `{{.Board}}`, `{{.OSVersion}}`, `{{.KubernetesVersion}}`; http(s), file:// or a path. */
  manifestUrlTemplate: string;
  verifySignatures: boolean;
  /** Pinned armored keyring (a path inside root): root-owned, not group- or world-writable. */
  keyringPath: string;
  /** Where the highest accepted manifest serial is kept (inside root). */
  serialPath?: string;
  /**
   * Where the highest Kubernetes version accepted from a verified manifest, and the API server's
   * last answer, are kept (inside root); an older version is never prepared.
   */
  versionRecordPath?: string;
  /** Directories components may be installed under (default /run/state/bin, /opt/bin). */
  allowedInstallDirs?: readonly string[];
  /** The marker: written last, atomically (`/etc/kubernetes/kubelet.env`). */
  kubeletEnvPath: string;
  /** Seed keys carried into kubelet.env (default KUBELET_IMAGE_URL, KUBELET_IMAGE_TAG). */
  kubeletEnvKeys?: readonly string[];
  /** Exit code 0: nothing staged; 100: an OS update is staged and awaits a reboot; else a failure. */
  osUpdateCommand?: readonly string[];
  /** How long the hook may run (default OS_UPDATE_HOOK_TIMEOUT_MS, 30 minutes). */
  osUpdateTimeoutMs?: number;
  /** Must reject when the reboot could not be started: preparation then fails and the unit retries. */
  reboot: () => Promise<void>;
  retry: RetryPolicy;
  apiRetry: RetryPolicy;
  logger: Logger;
}

export interface NodePreparationResult {
  kubernetesVersion: string;
  versionSource: VersionSource;
  /** Components were installed (not just found in place). */
  installed: boolean;
  /** An OS update was staged; the node reboots and preparation runs again. */
  rebooting: boolean;
}

/**
 * Prepares a node before kubeadm runs: OS facts, the Kubernetes version (forced, request, API
 * server, local seed), the component manifest for this board/OS/version with its detached
 * OpenPGP signature checked against the pinned keyring before parsing, the manifest's serial,
 * expiry and target checked, components installed by digest, an optional OS update, and finally
 * `kubelet.env`, atomically. Until `kubelet.env` exists the kubelet does not start, so any
 * failure or crash before it makes the next run start over.
 */
export async function prepareNode(options: NodePreparationOptions): Promise<NodePreparationResult> {
  const { root, logger } = options;
  const paths = {
    serial: options.serialPath ?? DEFAULT_SERIAL_PATH,
    versionRecord: options.versionRecordPath ?? DEFAULT_VERSION_RECORD_PATH,
  };
  const os = await readOsInfo(join(root, options.osReleasePath));
  const record = await readVersionRecord(root, paths.versionRecord);
  const { version, source } = await kubernetesVersionFor(options, record, paths.versionRecord);
  const manifest = await applicableManifest(options, { os, version, record, paths });
  const installed = await installComponents(root, manifest.components, {
    retry: options.retry,
    allowedDirs: options.allowedInstallDirs ?? DEFAULT_INSTALL_DIRS,
    protectedPaths: [options.kubeletEnvPath, options.keyringPath, options.seedFile, paths.serial, paths.versionRecord],
    logger,
  });
  const prepared = { kubernetesVersion: version, versionSource: source, installed };
  if (await osUpdateStaged(options)) return { ...prepared, rebooting: true };
  await writeKubeletEnv(options, version);
  logger.info('node prepared', { kubernetesVersion: version, source, installed });
  return { ...prepared, rebooting: false };
}

/**
 * The version to prepare (forced, request, API server, local seed). The API server's answer is
 * recorded whatever happens next: should it be silent on the next run, a seed older than its
 * answer is a downgrade risk.
 */
async function kubernetesVersionFor(
  options: NodePreparationOptions,
  record: VersionRecord,
  versionRecordPath: string,
): Promise<{ version: string; source: VersionSource }> {
  const { root } = options;
  const apiServerCa =
    options.apiServerCaPath === undefined
      ? undefined
      : await readFile(join(root, options.apiServerCaPath), 'utf8').catch((err: unknown) => {
          throw new Error(`cluster CA ${options.apiServerCaPath ?? ''} cannot be read: ${errorMessage(err)}`);
        });
  const { version, source, apiServerVersion } = await discoverKubernetesVersion({
    ...(options.forcedVersion === undefined ? {} : { forced: options.forcedVersion }),
    ...(options.requestVersion === undefined ? {} : { fromRequest: options.requestVersion }),
    ...(options.apiServerUrl === undefined ? {} : { apiServerUrl: options.apiServerUrl }),
    ...(apiServerCa === undefined ? {} : { apiServerCa }),
    ...(options.minimumVersion === undefined ? {} : { minimumVersion: options.minimumVersion }),
    ...(record.highestPrepared === undefined ? {} : { highestPrepared: record.highestPrepared }),
    ...(record.apiServerLastAnswer === undefined ? {} : { apiServerLastAnswer: record.apiServerLastAnswer }),
    apiRetry: options.apiRetry,
    seedFile: join(root, options.seedFile),
    logger: options.logger,
  });
  if (apiServerVersion !== undefined && apiServerVersion !== record.apiServerLastAnswer) {
    record.apiServerLastAnswer = apiServerVersion;
    await writeVersionRecord(root, versionRecordPath, record);
  }
  return { version, source };
}

/**
 * The component manifest for this board, OS and version: fetched, its detached signature checked
 * against the pinned keyring before it is parsed, its target, serial and expiry checked. A
 * verified manifest raises the serial floor and the highest prepared version.
 */
async function applicableManifest(
  options: NodePreparationOptions,
  node: { os: OsInfo; version: string; record: VersionRecord; paths: { serial: string; versionRecord: string } },
): Promise<ComponentManifest> {
  const { root } = options;
  const { os, version, record, paths } = node;
  const url = renderUrlTemplate(options.manifestUrlTemplate, {
    Board: os.board,
    OSVersion: os.version,
    KubernetesVersion: version,
  });
  const manifestBytes = await fetchSignedManifest(options, url);
  const shown = shownUrl(url);
  const manifest = parseComponentManifest(manifestBytes, shown);
  const highestSerial = await readHighestSerial(root, paths.serial);
  checkManifestApplies(manifest, shown, {
    board: os.board,
    osVersion: os.version,
    kubernetesVersion: version,
    highestSerial,
    now: new Date(),
  });
  // Only a verified manifest may raise the floor; an unsigned one could otherwise lock out every signed one.
  if (options.verifySignatures && manifest.serial > highestSerial)
    await recordHighestSerial(root, paths.serial, manifest.serial);
  if (options.verifySignatures && raisesFloor(version, record)) {
    record.highestPrepared = version;
    await writeVersionRecord(root, paths.versionRecord, record);
  }
  return manifest;
}

/** The manifest's bytes, with its signature (`<url>.asc`) checked unless verification is off (said loudly). */
async function fetchSignedManifest(options: NodePreparationOptions, url: string): Promise<Buffer> {
  const { logger } = options;
  const shown = shownUrl(url);
  logger.info('fetching component manifest', { url: shown });
  const manifestBytes = await fetchBytes(url, options.retry, { maxBytes: MAX_MANIFEST_BYTES, allowLocal: true });
  if (!options.verifySignatures) {
    logger.warn(
      'SIGNATURE VERIFICATION IS DISABLED (--no-verify-signatures): the component manifest is trusted unchecked',
      { url: shown },
    );
    return manifestBytes;
  }
  const armoredKeyring = await readTrustedFile(
    join(options.root, options.keyringPath),
    'pinned keyring',
    MAX_KEYRING_BYTES,
  );
  const keys = await readKeyring(armoredKeyring?.toString('utf8') ?? '', `pinned keyring ${options.keyringPath}`);
  const signature = await fetchBytes(`${url}.asc`, options.retry, { maxBytes: MAX_SIGNATURE_BYTES, allowLocal: true });
  try {
    const keyId = await verifyDetachedSignature(manifestBytes, signature.toString('utf8'), keys);
    logger.info('component manifest signature verified', { keyId });
  } catch (err) {
    throw new Error(`component manifest ${shown} is not signed by the pinned keyring: ${errorMessage(err)}`, {
      cause: err,
    });
  }
  return manifestBytes;
}

/**
 * Runs the OS update hook, if any. When it staged an update the node reboots and kubelet.env
 * stays unwritten: after the reboot preparation runs again for the new OS.
 */
async function osUpdateStaged(options: NodePreparationOptions): Promise<boolean> {
  if (options.osUpdateCommand === undefined || options.osUpdateCommand.length === 0) return false;
  if ((await runOsUpdateHook(options.osUpdateCommand, options.osUpdateTimeoutMs)) !== 'staged') return false;
  options.logger.info('OS update staged; rebooting before kubelet.env is written');
  try {
    await options.reboot();
  } catch (err) {
    throw new Error(
      `an OS update is staged but the reboot failed (kubelet.env stays unwritten): ${errorMessage(err)}`,
      {
        cause: err,
      },
    );
  }
  return true;
}

/** Whether `version` is newer than the highest this node prepared (or the first). */
function raisesFloor(version: string, record: VersionRecord): boolean {
  if (record.highestPrepared === undefined) return true;
  return (
    compareKubernetesVersions(
      parseKubernetesVersion(version, 'the chosen version'),
      parseKubernetesVersion(record.highestPrepared, 'the record'),
    ) > 0
  );
}

/** kubelet.env from the allowed seed keys with KUBELET_IMAGE_TAG set; other keys (secrets too) stay out. */
async function writeKubeletEnv(options: NodePreparationOptions, version: string): Promise<void> {
  const allowed = options.kubeletEnvKeys ?? KUBELET_ENV_KEYS;
  const seed = await readFile(join(options.root, options.seedFile), 'utf8').then(
    parseEnvFile,
    () => new Map<string, string>(),
  );
  const values = new Map([...seed].filter(([key]) => allowed.includes(key)));
  const dropped = [...seed.keys()].filter((key) => !allowed.includes(key));
  if (dropped.length > 0) options.logger.info('seed keys not carried into kubelet.env', { keys: dropped });
  values.set('KUBELET_IMAGE_TAG', versionToTag(version));
  const dir = await ensureDirectoryInsideRoot(options.root, dirname(options.kubeletEnvPath));
  await writeFileAtomic(join(dir, basename(options.kubeletEnvPath)), serializeEnvFile(values), { mode: 0o644 });
}
