import type { Measurements } from '@constellation/attestation';
import { UsageError } from '@constellation/command-line';
import { markedPcr15 } from '@constellation/keys';
import { HealthClient } from '@constellation/proto';
import { connectAttested } from './attested-connection.js';
import { unary } from './unary-call.js';
import { CLI_DEFAULTS } from './config.js';
import { loadClusterConfig } from './constellation-conf.js';
import { readClusterState } from './cluster-state.js';
import { workspaceFiles } from './workspace.js';
import { errorMessage } from '@constellation/errors';

export interface VerifyReport {
  node: string;
  pcrs: PcrReport[];
  attestationKey: string;
  endorsementKey?: string;
}

export interface PcrReport {
  pcr: number;
  expected: string;
  actual: string;
  matches: boolean;
}

/**
 * `constellation verify`: attests a node on demand (fresh nonce, over attested TLS) and compares
 * every configured PCR, plus PCR 15 against this cluster's ID mark, with what the node quoted.
 */
export async function verifyNode(
  workspace: string,
  node: string,
  warn: (message: string) => void = () => undefined,
): Promise<VerifyReport> {
  const files = workspaceFiles(workspace);
  const config = await loadClusterConfig(files.config);
  const endpoint = node.includes(':') ? node : `${node}:${CLI_DEFAULTS.verifyPort}`;
  const expected = new Map(config.attestation.measurements);
  // Without a cluster yet, PCR 15 is compared with the config (zero).
  const state = await readClusterState(files.state);
  if (state !== undefined)
    expected.set(15, { expected: markedPcr15(Buffer.from(state.clusterId, 'hex')), warnOnly: false });
  // Every PCR as warnOnly so the validator reports all of them instead of stopping at the first.
  const reportOnly: Measurements = new Map([...expected].map(([pcr, m]) => [pcr, { ...m, warnOnly: true }]));
  let connection;
  try {
    // With tpm2-ek the node must also prove its TPM identity before it is reported as verified.
    connection = await connectAttested(HealthClient, endpoint, config.attestation, {
      measurements: reportOnly,
      warn,
    });
  } catch (err) {
    throw new Error(`could not attest ${endpoint}: ${errorMessage(err)}`, { cause: err });
  }
  const { client, credentials, identity } = connection;
  try {
    await unary(client.check.bind(client), { service: '' }, 20_000);
  } catch (err) {
    throw new Error(`could not attest ${endpoint}: ${(credentials.failure ?? (err as Error)).message}`, { cause: err });
  } finally {
    client.close();
  }
  const result = credentials.result;
  if (result === undefined) throw new UsageError(`${endpoint} answered without an attestation`);
  const pcrs = [...expected].map(([pcr, m]) => {
    const actual = result.pcrs.get(pcr)?.toString('hex') ?? '(not quoted)';
    return { pcr, expected: m.expected.toString('hex'), actual, matches: actual === m.expected.toString('hex') };
  });
  return {
    node: endpoint,
    pcrs,
    attestationKey: result.attestationKeyName,
    ...(identity === undefined ? {} : { endorsementKey: identity.ekPublicKeyHash }),
  };
}
