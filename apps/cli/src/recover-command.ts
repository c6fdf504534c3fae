import { readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import { UsageError } from '@constellation/command-line';
import { deriveMeasurementSecret, deriveStateDiskKey, masterSecretFromJson } from '@constellation/keys';
import { RecoveryServiceClient, readRetryAfter } from '@constellation/proto';
import type { DescribeResponse, RecoverResponse } from '@constellation/proto';
import { AttestationRefusedError, connectAttested } from './attested-connection.js';
import { loadClusterConfig } from './constellation-conf.js';
import { CLI_DEFAULTS } from './config.js';
import { readClusterState } from './cluster-state.js';
import { unary } from './unary-call.js';
import { looseSecretFileWarning, workspaceFiles } from './workspace.js';
import { errorMessage } from '@constellation/errors';

const DISK_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CLUSTER_ID_HEX = /^[0-9a-f]{64}$/;

/**
 * `constellation recover`: after a full control-plane shutdown, hand a waiting control-plane node
 * what a rejoin ticket would: the key of its own state disk and the measurement secret. The node
 * is attested against the configured measurements first (PCR 15 zero: it has not re-joined yet)
 * and, for tpm2-ek, proves its TPM; then it says which disk and cluster it has. Nothing is sent to
 * a node that fails, or that belongs to another cluster. The key is derived for that disk and the
 * proven TPM, so a genuine machine the operator did not mean gets a key for its own disk only,
 * never the master secret (red-team finding: it used to get the master secret).
 */
export async function recoverNode(
  workspace: string,
  endpoint: string,
  warn: (message: string) => void = () => undefined,
  retry: { attempts: number; delayMs: number } = { attempts: 5, delayMs: 1_000 },
): Promise<RecoverResponse & { endpoint: string }> {
  // Said once, before any attempt; a missing file is recoverOnce's to explain.
  const loose = await looseSecretFileWarning(workspaceFiles(workspace).masterSecret).catch(() => undefined);
  if (loose !== undefined) warn(`warning: ${loose}`);
  // A node that is busy (its TPM with other activations, another recovery being checked) or not
  // reachable yet says so with UNAVAILABLE: ask again, after the time it gave.
  for (let attempt = 1; ; attempt++) {
    try {
      return await recoverOnce(workspace, endpoint, warn);
    } catch (err) {
      const busy = unavailable(err);
      if (busy === undefined || attempt >= retry.attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, busy.retryAfterMs ?? retry.delayMs));
    }
  }
}

/** The UNAVAILABLE status somewhere in `err`'s cause chain, with the retry-after it carried. */
function unavailable(err: unknown): { retryAfterMs: number | undefined } | undefined {
  let cause: unknown = err;
  // A bounded walk: a cause chain could loop.
  for (let depth = 0; depth < 8 && typeof cause === 'object' && cause !== null; depth++) {
    const { code, retryAfterMs } = cause as { code?: unknown; retryAfterMs?: number };
    // A status's retry-after-ms (bounded by readRetryAfter), or what a ServerBusyError carried.
    if (code === grpc.status.UNAVAILABLE) return { retryAfterMs: readRetryAfter(cause) ?? retryAfterMs };
    cause = (cause as { cause?: unknown }).cause;
  }
  return undefined;
}

async function recoverOnce(
  workspace: string,
  endpoint: string,
  warn: (message: string) => void,
): Promise<RecoverResponse & { endpoint: string }> {
  const files = workspaceFiles(workspace);
  const config = await loadClusterConfig(files.config);
  let secretText: string;
  try {
    secretText = await readFile(files.masterSecret, 'utf8');
  } catch {
    throw new UsageError(
      `no master secret at ${files.masterSecret}: recover needs the file \`constellation init\` wrote`,
    );
  }
  const masterSecret = masterSecretFromJson(secretText, files.masterSecret);
  const target = endpoint.includes(':') ? endpoint : `${endpoint}:${CLI_DEFAULTS.recoveryPort}`;
  let client: RecoveryServiceClient;
  let ekPublicKeyHash: string | undefined;
  try {
    let identity;
    ({ client, identity } = await connectAttested(RecoveryServiceClient, target, config.attestation, { warn }));
    ekPublicKeyHash = identity?.ekPublicKeyHash;
  } catch (err) {
    if (err instanceof AttestationRefusedError)
      throw new Error(`${target} failed attestation, nothing was sent to it: ${err.message}`, { cause: err });
    throw new Error(`recovery of ${target} failed: ${errorMessage(err)}`, { cause: err });
  }
  let answer: RecoverResponse;
  try {
    const described = await unary<object, DescribeResponse>(client.describe.bind(client), {}, 30_000);
    // The node's owner writes these strings: only checked values are used or printed (red-team
    // finding: escape sequences reached the operator's terminal).
    if (!CLUSTER_ID_HEX.test(described.clusterIdHex))
      throw new Error(
        `the node named its cluster ${JSON.stringify(described.clusterIdHex.slice(0, 80))}, not a cluster ID; nothing was sent to it`,
      );
    // Before anything is derived or sent: the node must be of this workspace's cluster.
    const state = await readClusterState(files.state);
    if (state !== undefined && state.clusterId !== described.clusterIdHex) {
      throw new Error(
        `the node belongs to cluster ${described.clusterIdHex}, not to this workspace's cluster ${state.clusterId}; nothing was sent to it`,
      );
    }
    // Without the state there is no cluster ID to hold the node's against: say so, as init does
    // for an unnamed first node (red-team finding: the check was skipped without a word).
    if (state === undefined)
      warn(
        `warning: no cluster state in this workspace (${files.state}), so the node's cluster ${described.clusterIdHex} is not checked: any genuine machine running the image gets this cluster's measurement secret`,
      );
    if (!DISK_UUID.test(described.diskUuid))
      throw new Error(`the node named its state disk ${JSON.stringify(described.diskUuid.slice(0, 64))}, not a UUID`);
    answer = await unary(
      client.recover.bind(client),
      {
        stateDiskKey: deriveStateDiskKey(masterSecret.key, masterSecret.salt, described.diskUuid, ekPublicKeyHash),
        measurementSecret: deriveMeasurementSecret(masterSecret.key, masterSecret.salt),
      },
      30_000,
    );
    if (answer.diskUuid !== described.diskUuid || answer.clusterIdHex !== described.clusterIdHex)
      throw new Error(
        `the node answered for state disk ${JSON.stringify(answer.diskUuid.slice(0, 64))} of cluster ${JSON.stringify(answer.clusterIdHex.slice(0, 80))}, not for the disk and cluster it described`,
      );
  } catch (err) {
    throw new Error(`recovery of ${target} failed: ${errorMessage(err)}`, { cause: err });
  } finally {
    client.close();
  }
  return { ...answer, endpoint: target };
}
