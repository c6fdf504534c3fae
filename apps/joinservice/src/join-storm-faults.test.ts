// Faults under load, bounded for the suite (the bench runs them with 200 nodes): the JoinService
// process killed mid-storm and started again, and the API server going silent for 10 s. The
// service is its own process (TypeScript source through tsx), the nodes run in two more, each
// node with its own software TPM identity (real credential activation and quotes). Each storm has
// a real control plane of its own, read by the service's ServiceAccount with its production RBAC;
// a worker's join writes nothing to it (no bootstrap token: kubeadm's file discovery).
import { createTempDir, tempDirForTest } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { CLUSTER_START_TIMEOUT_MS, CLUSTER_STOP_TIMEOUT_MS } from './join-service-cluster.fixture.js';
import { JOINSERVICE_DEFAULTS } from './config.js';
import { StormCluster, stormIdentities } from './join-storm.fixture.js';
import type { SoftwareTpmIdentity } from './software-tpm.fixture.js';
import type { EkCa } from '@constellation/swtpm';

const NODES = 30;
let ekCa: EkCa;
let identities: SoftwareTpmIdentity[];
let identityDir: TempDir;

beforeAll(async () => {
  identityDir = await createTempDir('constellation-storm-identities-');
  ({ ekCa, identities } = await stormIdentities(identityDir.path, NODES));
}, 60_000);

afterAll(async () => {
  await identityDir.remove();
});

describe('a join storm with faults', () => {
  /** A storm cluster closed when the test ends, however it ends (a failed test leaves none running). */
  async function stormCluster(options: { silenceableApi?: boolean } = {}): Promise<StormCluster> {
    const cluster = await StormCluster.start({
      dir: await tempDirForTest(),
      ekCa,
      identities,
      program: 'source',
      ...options,
    });
    onTestFinished(() => cluster.close());
    return cluster;
  }

  it(
    'every node joins when the JoinService is killed mid-storm and restarted, each with a credential in its own name, and nothing is written to the cluster',
    async () => {
      const running = await stormCluster();
      await running.startService();
      let killedAfterTickets = -1;
      const result = await running.storm({
        giveUpAfterMs: 40_000,
        // A join writes nothing now and takes tens of milliseconds: two in flight per node process
        // stretch the storm enough that the kill falls in its middle.
        concurrency: 2,
        during: async () => {
          // Kill once the first tickets are out: nodes that may or may not have received theirs.
          const started = Date.now();
          while ((await running.ticketsIssued()) < 1 && Date.now() - started < 15_000)
            await new Promise((resolve) => setTimeout(resolve, 20));
          killedAfterTickets = await running.ticketsIssued();
          await running.killService();
          await new Promise((resolve) => setTimeout(resolve, 500));
          await running.startService();
        },
      });
      expect(killedAfterTickets).toBeGreaterThanOrEqual(1);
      expect(killedAfterTickets, 'tickets out before the kill').toBeLessThan(NODES);
      // The kill was felt: nodes whose calls it cut asked the restarted service again.
      expect(result.joined.filter((o) => o.attempts > 1).length).toBeGreaterThan(0);
      expect(result.failed.map((o) => `${o.name}: ${o.lastError ?? ''}`)).toEqual([]);
      expect(result.joined).toHaveLength(NODES);
      expect(await running.auditJoins(result.outcomes)).toEqual({ tokenSecrets: 0, ticketsForAnotherNode: [] });
    },
    55_000 + CLUSTER_START_TIMEOUT_MS + CLUSTER_STOP_TIMEOUT_MS,
  );

  it(
    'refuses with UNAVAILABLE and retry-after while the API server is silent and its cluster configuration stale, and recovers by itself',
    async () => {
      const running = await stormCluster({ silenceableApi: true });
      await running.startService();
      const half = NODES / 2;
      // Half the nodes join first, then the API goes silent; a worker's ticket needs only the
      // cluster configuration, which the service keeps for 5 s, so the other half storms in once
      // that has gone stale, and the API answers again 10 s into the silence.
      const before = await running.storm({ first: 0, end: half, giveUpAfterMs: 30_000 });
      expect(before.failed).toEqual([]);
      running.silenceApi();
      const stale = JOINSERVICE_DEFAULTS.clusterConfigMaxAgeMs + 1_000;
      await new Promise((resolve) => setTimeout(resolve, stale));
      let resumedAfterMs = 0;
      const result = await running.storm({
        first: half,
        end: NODES,
        giveUpAfterMs: 40_000,
        during: async (startedAtMs) => {
          await new Promise((resolve) => setTimeout(resolve, 10_000 - stale - (Date.now() - startedAtMs)));
          running.resumeApi();
          resumedAfterMs = Date.now() - startedAtMs;
        },
      });
      expect(result.failed.map((o) => `${o.name}: ${o.lastError ?? ''}`)).toEqual([]);
      // While the API was silent the service refused (retryably), it did not hang: each refusal came
      // within the API timeout (3 s) plus the attestation, far below the nodes' 30 s call deadline.
      expect(result.retries['UNAVAILABLE'] ?? 0).toBeGreaterThanOrEqual(half);
      expect(result.retries['DEADLINE_EXCEEDED'] ?? 0).toBe(0);
      expect(Math.min(...result.joined.map((o) => o.joinedAfterMs ?? 0))).toBeGreaterThanOrEqual(resumedAfterMs - 100);
      expect(await running.auditJoins([...before.outcomes, ...result.outcomes])).toEqual({
        tokenSecrets: 0,
        ticketsForAnotherNode: [],
      });
    },
    55_000 + CLUSTER_START_TIMEOUT_MS + CLUSTER_STOP_TIMEOUT_MS,
  );
});
