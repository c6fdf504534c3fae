import { spawn } from 'node:child_process';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '@constellation/logger';
import { parseComponentManifest } from './component-manifest.js';
import { installComponents } from './component-installer.js';
import { parseEnvFile, serializeEnvFile, versionToTag } from './env-file.js';
import { fetchBytes } from './fetch-with-retry.js';
import type { RetryPolicy } from './fetch-with-retry.js';
import { readOsInfo } from './os-release.js';
import { verifyDetachedSignature } from './signature.js';
import { renderUrlTemplate } from './url-template.js';
import { discoverKubernetesVersion } from './version-discovery.js';
import type { VersionSource } from './version-discovery.js';
import { errorMessage } from '@constellation/errors';

export interface NodePreparationOptions {
  /** Every path below is inside this root (`/` on a node). */
  root: string;
  osReleasePath: string;
  forcedVersion?: string;
  requestVersion?: string;
  apiServerUrl?: string;
  /** Local seed and kubelet.env template (`/etc/kubernetes/installer/kubelet.env`). */
  seedFile: string;
  /** `{{.Board}}`, `{{.OSVersion}}`, `{{.KubernetesVersion}}`; http(s), file:// or a path. */
  manifestUrlTemplate: string;
  verifySignatures: boolean;
  /** Pinned armored keyring (a path inside root). */
  keyringPath: string;
  /** The marker: written last, atomically (`/etc/kubernetes/kubelet.env`). */
  kubeletEnvPath: string;
  /** A command whose output containing "update staged" means an OS update awaits a reboot. */
  osUpdateCommand?: readonly string[];
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
 * OpenPGP signature checked against the pinned keyring before parsing, components installed by
 * digest, an optional OS update, and finally `kubelet.env`, atomically. Until `kubelet.env`
 * exists the kubelet does not start, so any failure or crash before it makes the next run start over.
 */
export async function prepareNode(options: NodePreparationOptions): Promise<NodePreparationResult> {
  const { root, logger } = options;
  const inRoot = (path: string): string => join(root, path);
  const os = await readOsInfo(inRoot(options.osReleasePath));
  const { version, source } = await discoverKubernetesVersion({
    ...(options.forcedVersion === undefined ? {} : { forced: options.forcedVersion }),
    ...(options.requestVersion === undefined ? {} : { fromRequest: options.requestVersion }),
    ...(options.apiServerUrl === undefined ? {} : { apiServerUrl: options.apiServerUrl }),
    apiRetry: options.apiRetry,
    seedFile: inRoot(options.seedFile),
    logger,
  });
  const url = renderUrlTemplate(options.manifestUrlTemplate, {
    Board: os.board,
    OSVersion: os.version,
    KubernetesVersion: version,
  });
  logger.info('fetching component manifest', { url });
  const manifestBytes = await fetchBytes(url, options.retry);
  if (options.verifySignatures) {
    const signature = (await fetchBytes(`${url}.asc`, options.retry)).toString('utf8');
    const keyring = await readFile(inRoot(options.keyringPath), 'utf8').catch((err: unknown) => {
      throw new Error(`pinned keyring ${options.keyringPath} cannot be read: ${errorMessage(err)}`);
    });
    try {
      const keyId = await verifyDetachedSignature(manifestBytes, signature, keyring);
      logger.info('component manifest signature verified', { keyId });
    } catch (err) {
      throw new Error(`component manifest ${url} is not signed by the pinned keyring: ${errorMessage(err)}`, {
        cause: err,
      });
    }
  } else {
    logger.warn(
      'SIGNATURE VERIFICATION IS DISABLED (--no-verify-signatures): the component manifest is trusted unchecked',
      { url },
    );
  }
  const manifest = parseComponentManifest(manifestBytes, url);
  if (manifest.kubernetesVersion !== version) {
    throw new Error(
      `component manifest ${url} is for Kubernetes ${manifest.kubernetesVersion}, this node needs ${version}`,
    );
  }
  const installed = await installComponents(root, manifest.components, options.retry, logger);

  if (options.osUpdateCommand !== undefined && options.osUpdateCommand.length > 0) {
    const output = await run(options.osUpdateCommand);
    if (/update staged/i.test(output)) {
      // kubelet.env stays unwritten: after the reboot preparation runs again for the new OS.
      logger.info('OS update staged; rebooting before kubelet.env is written');
      await options.reboot();
      return { kubernetesVersion: version, versionSource: source, installed, rebooting: true };
    }
  }

  const template = await readFile(inRoot(options.seedFile), 'utf8').then(parseEnvFile, () => new Map<string, string>());
  template.set('KUBELET_IMAGE_TAG', versionToTag(version));
  await writeAtomically(inRoot(options.kubeletEnvPath), serializeEnvFile(template));
  logger.info('node prepared', { kubernetesVersion: version, source, installed });
  return { kubernetesVersion: version, versionSource: source, installed, rebooting: false };
}

async function writeAtomically(path: string, content: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.partial`;
  const handle = await open(temp, 'w', 0o644);
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, path);
}

function run(command: readonly string[]): Promise<string> {
  const [program = '', ...args] = command;
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.once('error', (err) => {
      reject(new Error(`OS update command ${program} cannot run: ${err.message}`));
    });
    child.once('close', (code) => {
      if (code === 0) resolve(out);
      else reject(new Error(`OS update command ${command.join(' ')} exited with ${String(code)}: ${out.trim()}`));
    });
  });
}
