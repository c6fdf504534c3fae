import { readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import { UsageError } from '@constellation/command-line';
import { masterSecretFromJson } from '@constellation/keys';
import { RecoveryServiceClient } from '@constellation/proto';
import type { RecoverResponse } from '@constellation/proto';
import { AttestationRefusedError, connectAttested } from './attested-connection.js';
import { loadClusterConfig } from './constellation-conf.js';
import { CLI_DEFAULTS } from './config.js';
import { readClusterState } from './cluster-state.js';
import { workspaceFiles } from './workspace.js';
import { errorMessage } from '@constellation/errors';

/**
 * `constellation recover`: after a full control-plane shutdown, hand a waiting control-plane node
 * the master secret so it can open its state disk. The node is attested against the configured
 * measurements first (PCR 15 zero: it has not re-joined yet); nothing is sent to a node that fails.
 */
export async function recoverNode(
  workspace: string,
  endpoint: string,
  warn: (message: string) => void = () => undefined,
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
  try {
    ({ client } = await connectAttested(RecoveryServiceClient, target, config.attestation, { warn }));
  } catch (err) {
    if (err instanceof AttestationRefusedError)
      throw new Error(`${target} failed attestation, the master secret was not sent: ${err.message}`, { cause: err });
    throw new Error(`recovery of ${target} failed: ${errorMessage(err)}`, { cause: err });
  }
  let answer: RecoverResponse;
  try {
    answer = await new Promise<RecoverResponse>((resolve, reject) => {
      client.recover(
        { masterSecret: masterSecret.key, masterSalt: masterSecret.salt },
        new grpc.Metadata(),
        { deadline: Date.now() + 30_000 },
        (err, res) => {
          if (err) reject(err);
          else resolve(res);
        },
      );
    });
  } catch (err) {
    throw new Error(`recovery of ${target} failed: ${errorMessage(err)}`, { cause: err });
  } finally {
    client.close();
  }
  const state = await readClusterState(files.state);
  if (state !== undefined && state.clusterId !== answer.clusterIdHex) {
    throw new Error(
      `${target} belongs to cluster ${answer.clusterIdHex}, not to this workspace's cluster ${state.clusterId}`,
    );
  }
  return { ...answer, endpoint: target };
}
