import { eventLogPolicyViolations } from '@constellation/attestation';
import type { Measurements } from '@constellation/attestation';
import { describeEventData, eventsForPcr } from '@constellation/eventlog';
import type { EventLog, LogEvent } from '@constellation/eventlog';
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
  /** Events in the node's TCG event log (it replays to the quote); absent: the node sent none. */
  eventLogEvents?: number;
  /**
   * Why the node's events break the configured event policy, one message per rule and event, or
   * why the rules cannot be read (no log; events in PCRs the quote does not cover), as the
   * JoinService would refuse it.
   */
  eventPolicyViolations: string[];
}

export interface PcrReport {
  pcr: number;
  expected: string;
  actual: string;
  matches: boolean;
  /** For a PCR that does not match: the events that extended it, from the node's event log. */
  events?: PcrEvent[];
}

/** One event that extended a PCR: its SHA-256 digest and what its data says (untrusted). */
export interface PcrEvent {
  index: number;
  type: string;
  sha256: string;
  /** The event data's decoded kind, and whether it hashes to the digests (otherwise only the log says so). */
  data: { kind: string; hashesToDigests: boolean };
  /** The event itself, for `eventLines` (not part of the JSON). */
  event: LogEvent;
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
    // The log's replay is still enforced (the validator's own check); the event policy is reported.
    connection = await connectAttested(HealthClient, endpoint, config.attestation, {
      measurements: reportOnly,
      enforceEventPolicy: false,
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
  const log = result.eventLog;
  const pcrs = [...expected].map(([pcr, m]): PcrReport => {
    const actual = result.pcrs.get(pcr)?.toString('hex') ?? '(not quoted)';
    const matches = actual === m.expected.toString('hex');
    return {
      pcr,
      expected: m.expected.toString('hex'),
      actual,
      matches,
      ...(matches || log === undefined ? {} : { events: pcrEvents(log, pcr) }),
    };
  });
  // The JoinService's own reading: no rule is read on events of a PCR the quote leaves out.
  const eventPolicyViolations = eventLogPolicyViolations(
    log === undefined ? undefined : { log, unquoted: result.eventLogUnquoted ?? [] },
    config.attestation.eventPolicy,
  );
  return {
    node: endpoint,
    pcrs,
    attestationKey: result.attestationKeyName,
    ...(identity === undefined ? {} : { endorsementKey: identity.ekPublicKeyHash }),
    ...(log === undefined ? {} : { eventLogEvents: log.events.length }),
    eventPolicyViolations,
  };
}

function pcrEvents(log: EventLog, pcr: number): PcrEvent[] {
  return eventsForPcr(log, pcr).map((event) => {
    const view = describeEventData(event);
    return {
      index: event.index,
      type: event.typeName,
      sha256: event.digests.get('sha256')?.toString('hex') ?? '',
      data: { kind: view.details.kind, hashesToDigests: view.hashesToDigests },
      event,
    };
  });
}
