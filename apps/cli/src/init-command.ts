import { randomBytes } from 'node:crypto';
import { access, link, readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import type { AttestedChannelCredentials } from '@constellation/atls';
import { UsageError } from '@constellation/command-line';
import { generateMasterSecret, masterSecretToJson } from '@constellation/keys';
import { INIT_CALL_DEADLINE_MS, InitServiceClient, InitStep, StepState } from '@constellation/proto';
import type { InitFailure, InitResponse, InitSuccess } from '@constellation/proto';
import { AttestationRefusedError, connectAttested } from './attested-connection.js';
import { loadClusterConfig } from './constellation-conf.js';
import { writeClusterState } from './cluster-state.js';
import { workspaceFiles, writeWorkspaceFile } from './workspace.js';
import { errorMessage } from '@constellation/errors';

export interface InitCommandOptions {
  workspace: string;
  /** Human progress lines (stderr in the CLI). */
  print: (line: string) => void;
  /** Attempts for transport errors (never after an attestation failure). */
  attempts?: number;
  retryDelayMs?: number;
  /** Replace an existing master secret (`--force`); without it init refuses, before contacting any node. */
  force?: boolean;
  /**
   * Conformance mode (`--conformance`): the cluster runs kubeadm's kube-proxy add-on, which every
   * node's Services (ClusterIP, NodePort) and the Kubernetes conformance suite need; without it
   * kubeadm init skips the add-on.
   */
  conformance?: boolean;
}

export interface InitResult {
  clusterId: string;
  kubeconfig: string;
  state: string;
  masterSecret: string;
}

/** Thrown when the node reported a failure; says whether retrying against the node is safe. */
export class InitFailedError extends Error {
  override readonly name = 'InitFailedError';
  readonly retrySafe: boolean;
  constructor(message: string, retrySafe: boolean) {
    super(message);
    this.retrySafe = retrySafe;
  }
}

const STEP_NAMES: Record<number, string> = {
  [InitStep.INIT_STEP_CHECK_INIT_SECRET]: 'check init secret',
  [InitStep.INIT_STEP_DERIVE_KEYS]: 'derive cluster keys',
  [InitStep.INIT_STEP_LOCK_NODE]: 'lock node (point of no return)',
  [InitStep.INIT_STEP_REKEY_STATE_DISK]: 're-key state disk',
  [InitStep.INIT_STEP_WRITE_NODE_STATE]: 'write node state',
  [InitStep.INIT_STEP_PREPARE_NODE]: 'prepare node',
  [InitStep.INIT_STEP_KUBEADM_INIT]: 'kubeadm init',
  [InitStep.INIT_STEP_WAIT_FOR_API_SERVER]: 'wait for the API server',
  [InitStep.INIT_STEP_PUBLISH_CLUSTER_CONFIG]: 'publish cluster configuration',
  [InitStep.INIT_STEP_ISSUE_ADMIN_KUBECONFIG]: 'issue admin kubeconfig',
};

/** The workspace must be ready for a first init; returns the init secret the infrastructure wrote. */
async function readyToInit(files: ReturnType<typeof workspaceFiles>, force: boolean): Promise<Buffer> {
  if (await exists(files.state))
    throw new UsageError(`${files.state} exists: this workspace already holds an initialised cluster`);
  let initSecret: Buffer;
  try {
    initSecret = await readFile(files.initSecret);
  } catch {
    throw new UsageError(
      `no init secret at ${files.initSecret}: the infrastructure (or \`constellation mini up\`) writes it`,
    );
  }
  if (!force && (await exists(files.masterSecret))) throw masterSecretExists(files.masterSecret);
  return initSecret;
}

const masterSecretExists = (path: string): UsageError =>
  new UsageError(
    `${path} exists: it may be the only recovery secret of a cluster an earlier init already ` +
      'locked; move it away (or pass --force to replace it) and run init again',
  );

/**
 * Writes the new master secret before anything is sent. Without `force` it is created only if no
 * file is there, so of two inits racing in one workspace exactly one goes on (both used to pass
 * the check, write and send their own secret). With `force` an existing one is first kept beside
 * it as `<file>.<time>.bak`, since it may be the only recovery secret of a locked cluster (it was
 * replaced for good; red-team findings).
 */
async function writeMasterSecret(
  path: string,
  json: string,
  force: boolean,
  print: (line: string) => void,
): Promise<void> {
  if (!force) {
    try {
      await writeWorkspaceFile(path, json, true, { exclusive: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw masterSecretExists(path);
      throw err;
    }
    return;
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  for (let i = 0; ; i++) {
    const backup = `${path}.${stamp}${i === 0 ? '' : `-${i}`}.bak`;
    try {
      await link(path, backup); // the same file under a second name: its content and mode, kept
      print(`previous master secret kept at ${backup}`);
      break;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') break;
      if (code !== 'EEXIST') throw err;
    }
  }
  await writeWorkspaceFile(path, json, true);
}

const attestationFailed = (endpoint: string, why: string, cause: unknown): Error =>
  new Error(`the node at ${endpoint} failed attestation, nothing was sent to it: ${why}`, { cause });

/** Whether a failed attempt may be repeated: only transport errors, never an attestation or init failure. */
function retryable(err: unknown, attempt: number, attempts: number): boolean {
  if (err instanceof InitFailedError || err instanceof UsageError) return false;
  return (err as { code?: number }).code === grpc.status.UNAVAILABLE && attempt < attempts;
}

/**
 * One attempt: attested TLS to the first node (its identity and measurements checked before
 * anything is sent), then the Init stream. Resolves 'retry' when the node was not reachable.
 */
async function initAttempt(
  config: Awaited<ReturnType<typeof loadClusterConfig>>,
  request: Parameters<typeof stream>[1],
  options: InitCommandOptions,
  attempt: number,
): Promise<Collected | 'retry'> {
  const attempts = options.attempts ?? 5;
  options.print(`dialing ${config.initEndpoint} over attested TLS (attempt ${attempt})`);
  let connection;
  try {
    connection = await connectAttested(InitServiceClient, config.initEndpoint, config.attestation, {
      warn: options.print,
    });
  } catch (err) {
    if (err instanceof AttestationRefusedError) throw attestationFailed(config.initEndpoint, err.message, err);
    if (!retryable(err, attempt, attempts)) throw err;
    options.print(`node not reachable yet (${errorMessage(err)}); retrying`);
    return 'retry';
  }
  const { client, credentials, identity } = connection;
  if (identity !== undefined) {
    options.print(
      `node identity proven: TPM endorsement key sha256:${identity.ekPublicKeyHash}, certified by ${identity.certificatePath.slice(1).join(' <- ')}`,
    );
  }
  // Genuine is not enough: the secrets go to the machine the configuration names, not to any
  // genuine machine that answers at that address (red-team finding).
  const expected = config.attestation.variant === 'tpm2-ek' ? config.attestation.firstControlPlaneEk : undefined;
  if (expected !== undefined && identity?.ekPublicKeyHash !== expected) {
    client.close();
    throw attestationFailed(
      config.initEndpoint,
      `its endorsement key sha256:${identity?.ekPublicKeyHash ?? '(none)'} is not the expected first control-plane node's (attestation.firstControlPlaneEk sha256:${expected})`,
      undefined,
    );
  }
  if (expected === undefined && identity !== undefined)
    options.print(
      'warning: attestation.firstControlPlaneEk is not set, so any genuine machine running the image at this address would get the secrets',
    );
  try {
    return await stream(client, request, options.print, credentials);
  } catch (err) {
    const attestation = credentials.failure;
    if (attestation !== undefined) throw attestationFailed(config.initEndpoint, attestation.message, err);
    if (!retryable(err, attempt, attempts)) throw err;
    options.print(`node not reachable yet (${errorMessage(err)}); retrying`);
    return 'retry';
  } finally {
    client.close();
  }
}

/**
 * `constellation init`: verify the first node's attestation against the configured measurements
 * (nothing is sent before that), send the master secret, show progress, and write kubeconfig,
 * state and master secret. The master secret is on disk before it is sent, so nothing is lost if
 * the CLI dies while the node works.
 */
export async function runInit(options: InitCommandOptions): Promise<InitResult> {
  const files = workspaceFiles(options.workspace);
  const config = await loadClusterConfig(files.config);
  const initSecret = await readyToInit(files, options.force === true);
  const masterSecret = generateMasterSecret();
  const measurementSalt = randomBytes(32);
  await writeMasterSecret(files.masterSecret, masterSecretToJson(masterSecret), options.force === true, options.print);
  options.print(`master secret written to ${files.masterSecret} (keep it: it recovers the cluster)`);
  const request = {
    initSecret,
    masterSecret: masterSecret.key,
    masterSalt: masterSecret.salt,
    measurementSalt,
    kubernetesVersion: config.kubernetesVersion,
    kubernetesComponents: [],
    clusterName: config.name,
    apiserverCertSans: config.apiServerCertSans,
    serviceCidr: config.serviceCidr,
    conformanceMode: options.conformance === true,
  };
  let attempt = 1;
  let messages = await initAttempt(config, request, options, attempt);
  while (messages === 'retry') {
    await new Promise((resolve) => setTimeout(resolve, options.retryDelayMs ?? 2_000));
    messages = await initAttempt(config, request, options, ++attempt);
  }
  const success = messages.success;
  if (success === undefined)
    return failed(messages.failure, messages.logs, messages.logsNote, options, files.initFailureLog(new Date()));
  await writeWorkspaceFile(files.kubeconfig, success.kubeconfig, true);
  const state = {
    clusterId: Buffer.from(success.clusterId).toString('hex'),
    measurementSalt: measurementSalt.toString('base64'),
    initEndpoint: config.initEndpoint,
    kubernetesVersion: success.kubernetesVersion,
  };
  await writeClusterState(files.state, state);
  return {
    clusterId: state.clusterId,
    kubeconfig: files.kubeconfig,
    state: files.state,
    masterSecret: files.masterSecret,
  };
}

interface Collected {
  success?: InitSuccess;
  failure?: InitFailure;
  logs: Buffer[];
  logsNote: string;
}

function stream(
  client: InitServiceClient,
  request: Parameters<InitServiceClient['init']>[0],
  print: (line: string) => void,
  credentials: AttestedChannelCredentials,
): Promise<Collected> {
  return new Promise((resolve, reject) => {
    const collected: Collected = { logs: [], logsNote: '' };
    const call = client.init(request, { deadline: Date.now() + INIT_CALL_DEADLINE_MS });
    let verifiedShown = false;
    call.on('data', (message: InitResponse) => {
      if (!verifiedShown && credentials.result !== undefined) {
        verifiedShown = true;
        print(`node attested: all ${credentials.result.pcrs.size} PCRs quoted, measurements match`);
      }
      const kind = message.kind;
      if (kind?.$case === 'progress') {
        const name = STEP_NAMES[kind.value.step] ?? InitStep[kind.value.step];
        if (kind.value.state === StepState.STEP_STATE_SUCCEEDED) print(`  ✓ ${name} (${kind.value.elapsedMs} ms)`);
        if (kind.value.state === StepState.STEP_STATE_FAILED) print(`  ✗ ${name}`);
      } else if (kind?.$case === 'success') collected.success = kind.value;
      else if (kind?.$case === 'failure') collected.failure = kind.value;
      else if (kind?.$case === 'log') collected.logs.push(Buffer.from(kind.value.data));
      else if (kind?.$case === 'logsDone') collected.logsNote = kind.value.collectionError;
    });
    call.on('error', (err: grpc.ServiceError) => {
      if (collected.failure !== undefined) resolve(collected);
      else reject(err);
    });
    call.on('end', () => {
      resolve(collected);
    });
  });
}

async function failed(
  failure: InitFailure | undefined,
  logs: Buffer[],
  logsNote: string,
  options: InitCommandOptions,
  logPath: string,
): Promise<never> {
  const error = failure?.error ?? 'the node ended the stream without a result';
  const retrySafe = failure?.retrySafe ?? false;
  const lines = [`init failed: ${error}`];
  if (logs.length > 0) {
    // Owner-only, as the workspace's other files: the node's text, which may name its hosts and setup.
    await writeWorkspaceFile(logPath, Buffer.concat(logs), true);
    lines.push(`the node's logs are in ${logPath}`);
  } else {
    lines.push('the node sent no logs');
  }
  if (logsNote !== '') lines.push(`log collection on the node failed: ${logsNote}`);
  lines.push(
    retrySafe
      ? 'retrying is safe: the node failed before its point of no return and is still waiting for init'
      : 'retrying is not safe: the node was past its point of no return; it marks its state disk for reset and reboots. Start again with fresh machines.',
  );
  for (const line of lines.slice(1)) options.print(line);
  throw new InitFailedError(lines[0] ?? error, retrySafe);
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
