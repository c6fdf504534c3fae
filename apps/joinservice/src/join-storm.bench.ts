// `npm run bench`: the JoinService under join storms, as production runs it. The service is its
// bundled program (dist/joinservice.mjs) in its own process; the simulated nodes run in two other
// processes, each node with its own TPM identity: an RSA-2048 EK with a certificate from the
// bench's EK CA, registered in the instance registry, and an attestation key. The TPMs are
// SOFTWARE (keys in the node process, cached on disk between runs), so that 500 swtpm processes
// do not dominate the run; every join still does a real EK path validation, a real credential
// activation with the EK's private key (set up before the storm, as a TPM's EK is a loaded key) and
// a real quote verified by the service. The API server is the real one (a control plane of each
// storm's own: etcd, kube-apiserver, the controllers), read by the service's ServiceAccount with
// its production RBAC; a worker's join writes nothing to it (no bootstrap token), and the bench
// prints the Secret writes kube-apiserver counted in its /metrics (kubeadm's one, no join's).
// Prints figures; asserts nothing. BENCH_CPU_PROF=<dir> writes a CPU profile of the service;
// BENCH_NODE_PROCESSES=<n> runs the growth storms' nodes in n processes instead of 2.
import { generateKeyPairSync } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { connect, createServer } from 'node:tls';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { atlsPublicRoot, issueFromPublicRoot } from '@constellation/atls';
import type { EkCa } from '@constellation/swtpm';
import { buildBundles } from '@constellation/testing';
import { acceptQueueLength } from './accept-queue.js';
import { histogramQuantile } from './prometheus-histogram.fixture.js';
import { StormCluster, stormIdentities } from './join-storm.fixture.js';
import type { StormClusterOptions, StormResult } from './join-storm.fixture.js';
import type { SoftwareTpmIdentity } from './software-tpm.fixture.js';

const STEADY_NODES = Number(process.env['BENCH_STEADY_NODES'] ?? 240);
/**
 * Joins of other nodes that the steady run's service handles first: a fresh process's first joins
 * run before V8 has optimised the join path and before its connections are open, a start-up cost
 * that the growth storms measure. Both are printed.
 */
const WARMUP_NODES = Number(process.env['BENCH_WARMUP_NODES'] ?? 120);
const CONCURRENT = 12;
const GROWTH = (process.env['BENCH_GROWTH'] ?? '50,100,200,500').split(',').map(Number);
const FAULT_NODES = Number(process.env['BENCH_FAULT_NODES'] ?? 200);
const GROWTH_NODE_PROCESSES = Number(process.env['BENCH_NODE_PROCESSES'] ?? 2);
const HANDSHAKES = 300;
/** Handshakes on the anchor's server before it is timed, as the service is warmed before its steady run. */
const WARMUP_HANDSHAKES = 100;
/** The fault run kills the service once a quarter of its nodes have their tickets. */
const KILL_AFTER_TICKETS = Math.ceil(FAULT_NODES / 4);
/** How often, and for how long from a growth storm's start, its accept queue is sampled. */
const ACCEPT_QUEUE_SAMPLE_MS = 50;
const ACCEPT_QUEUE_WINDOW_MS = 5_000;
const CACHE = process.env['BENCH_IDENTITY_CACHE'] ?? join(tmpdir(), 'constellation-join-storm-identities-rsa-ca');

/** p50 and p99 of the service's handshake histogram, as bucket bounds ("at most"). */
function handshakeQuantiles(metrics: string): string {
  const atMost = (q: number): string => {
    const seconds = histogramQuantile(metrics, 'constellation_joinservice_tls_handshake_seconds', q);
    if (seconds === undefined) return 'none';
    return seconds === Infinity ? 'over 5 s' : `at most ${(seconds * 1000).toLocaleString('en')} ms`;
  };
  return `p50 ${atMost(0.5)}, p99 ${atMost(0.99)}`;
}

/** kube-apiserver's Secret writes (POST secrets) and their time, read from its /metrics: a join writes none. */
async function secretWrites(cluster: StormCluster): Promise<string> {
  const writes = await cluster.apiServerSecretWrites();
  const atMost = (seconds: number | undefined): string => {
    if (seconds === undefined) return 'none';
    return seconds === Infinity ? 'over 60 s' : `at most ${(seconds * 1000).toLocaleString('en')} ms`;
  };
  return `kube-apiserver's Secret writes (POST secrets) in all: ${writes.count} (kubeadm's; joins write none), p50 ${atMost(writes.p50)}, p99 ${atMost(writes.p99)}`;
}

function leaf(name: string): { key: string; cert: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    cert: issueFromPublicRoot(publicKey, name),
  };
}

/**
 * Mutual TLS 1.3 handshakes per second over loopback, `concurrency` at a time: the anchor. The
 * first `warmup` handshakes are not timed.
 */
async function mutualTlsRate(total: number, concurrency: number, warmup: number): Promise<number> {
  const ca = atlsPublicRoot().certificatePem;
  const server = createServer(
    { ...leaf('server'), ca, requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.3' },
    (socket) => socket.end(),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const client = leaf('client');
  const handshakes = async (count: number): Promise<void> => {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next++ < count) {
          await new Promise<void>((resolve, reject) => {
            const socket = connect(
              {
                host: '127.0.0.1',
                port,
                ...client,
                ca,
                servername: 'bench.local',
                checkServerIdentity: () => undefined,
              },
              () => {
                socket.destroy();
                resolve();
              },
            );
            socket.once('error', reject);
          });
        }
      }),
    );
  };
  await handshakes(warmup);
  const started = performance.now();
  await handshakes(total);
  const rate = total / ((performance.now() - started) / 1000);
  await new Promise((resolve) => server.close(resolve));
  return rate;
}

const ms = (value: number): string => value.toFixed(0).padStart(6);

function summary(result: StormResult): string {
  const retries = Object.entries(result.retries)
    .map(([code, n]) => `${code} ${n}`)
    .join(', ');
  const serviceCpu =
    result.cpu.service === undefined
      ? ''
      : `; service CPU ${(result.cpu.service / result.joined.length).toFixed(1)} ms/join`;
  const controlPlaneCpu =
    result.cpu.controlPlane === undefined
      ? ''
      : `, control plane ${(result.cpu.controlPlane / result.joined.length).toFixed(1)} ms/join`;
  const nodesCpu = `, nodes ${(result.cpu.nodes / result.joined.length).toFixed(1)} ms/join`;
  return `${String(result.joined.length).padStart(4)} joined, ${result.failed.length} failed; ${result.joinsPerSecond.toFixed(1).padStart(6)} joins/s${serviceCpu}${nodesCpu}${controlPlaneCpu}; call p50/p95/p99 ${ms(result.callMs(0.5))} ${ms(result.callMs(0.95))} ${ms(result.callMs(0.99))} ms; joined after p50/p99 ${ms(result.joinedAfterMs(0.5))} ${ms(result.joinedAfterMs(0.99))} ms; retried calls: ${retries || 'none'}${result.failed[0] === undefined ? '' : `; first failure: ${result.failed[0].lastError ?? ''}`}`;
}

/** A fresh cluster (real control plane, registry, JoinService process) for `identities`; removed afterwards. */
async function withCluster<T>(
  ekCa: EkCa,
  identities: readonly SoftwareTpmIdentity[],
  run: (cluster: StormCluster) => Promise<T>,
  options: Pick<StormClusterOptions, 'silenceableApi'> & { cpuProfileDir?: string | undefined } = {},
): Promise<T> {
  const dir = join(tmpdir(), `constellation-join-storm-${process.pid}-${Date.now()}`);
  const { cpuProfileDir, ...rest } = options;
  const cluster = await StormCluster.start({
    dir,
    ekCa,
    identities,
    program: 'bundle',
    ...rest,
    ...(cpuProfileDir === undefined ? {} : { cpuProfileDir }),
  });
  try {
    await cluster.startService();
    return await run(cluster);
  } finally {
    await cluster.close();
    await rm(dir, { recursive: true, force: true });
  }
}

// The service runs as its shipped bundle: build it (cheap when Nx's cache holds it).
await buildBundles(['@constellation/joinservice'], 300_000);
const needed = Math.max(WARMUP_NODES + STEADY_NODES, ...GROWTH, FAULT_NODES);
const making = performance.now();
const { ekCa, identities, manufactured } = await stormIdentities(CACHE, needed);
console.log('\nJoinService join storms (service: bundled program, own process; nodes: 2 other processes)');
console.log(
  `node identities: ${identities.length} SOFTWARE TPMs (RSA-2048 EK + EK certificate from the bench EK CA (${ekCa.keyAlgorithm === 'rsa-2048' ? 'RSA-2048 root and intermediate, SHA-256, as TPM vendors sign RSA EK certificates' : 'ECDSA P-384 root and intermediate'}) + ECDSA AK), ${manufactured} manufactured now in ${((performance.now() - making) / 1000).toFixed(1)} s, the rest from the cache ${CACHE}`,
);
console.log(`load average at the start (other work on this machine shows here): ${loadavg()[0]?.toFixed(1) ?? '?'}`);
console.log(
  'each join: EK certificate path + credential activation (EK private key) + registry lookup + quote + 2 fresh kubelet CSRs (keys and CSRs made by each node before the storm, as on its own machine), two certificates signed, the cluster configuration read (cached 5 s) from the real kube-apiserver; nothing written to it',
);

// 1. Steady load: distinct nodes, 12 calls in flight at any time, next to raw mutual TLS. The
// service first serves WARMUP_NODES other nodes the same way; the steady run is the next storm.
/** The anchor, and the CPU each of its handshakes took (both ends, this process). */
async function timedAnchor(): Promise<{ rate: number; cpuMs: number }> {
  const cpuAtStart = process.cpuUsage();
  const rate = await mutualTlsRate(HANDSHAKES, CONCURRENT, WARMUP_HANDSHAKES);
  const cpu = process.cpuUsage(cpuAtStart);
  return { rate, cpuMs: (cpu.user + cpu.system) / 1000 / (WARMUP_HANDSHAKES + HANDSHAKES) };
}

// The anchor runs just before and just after the steady storm, and the ratio uses their mean:
// this shared machine's speed drifts (the two anchors of one run differed by up to a quarter), and
// one anchor timed on one side of the storm compared the storm with another machine.
const { warmup, steady, anchorBefore, steadyWrites } = await withCluster(
  ekCa,
  identities.slice(0, WARMUP_NODES + STEADY_NODES),
  async (cluster) => {
    const warmup =
      WARMUP_NODES > 0
        ? await cluster.storm({ end: WARMUP_NODES, processes: 2, concurrency: CONCURRENT / 2 })
        : undefined;
    const anchorBefore = await timedAnchor();
    const steady = await cluster.storm({ first: WARMUP_NODES, processes: 2, concurrency: CONCURRENT / 2 });
    return { warmup, steady, anchorBefore, steadyWrites: await secretWrites(cluster) };
  },
  { cpuProfileDir: process.env['BENCH_CPU_PROF'] },
);
const anchorAfter = await timedAnchor();
const tls = (anchorBefore.rate + anchorAfter.rate) / 2;
const tlsCpuMs = (anchorBefore.cpuMs + anchorAfter.cpuMs) / 2;
if (warmup !== undefined) {
  console.log(
    `\nA fresh service's first ${WARMUP_NODES} joins, ${CONCURRENT} concurrent (start-up, counted apart from the steady state):`,
  );
  console.log(`  ${summary(warmup)}`);
}
console.log(
  `\n${STEADY_NODES} distinct nodes, ${CONCURRENT} concurrent${warmup === undefined ? '' : ', the same service next'} (steady state):`,
);
console.log(`  joins per second            ${steady.joinsPerSecond.toFixed(1)}`);
console.log(
  `  raw mutual-TLS handshakes   ${tls.toFixed(1)} /s (same run, ${CONCURRENT} concurrent, node:tls, after ${WARMUP_HANDSHAKES} untimed; the mean of ${anchorBefore.rate.toFixed(1)} just before the steady storm and ${anchorAfter.rate.toFixed(1)} just after)`,
);
console.log(`  ratio                       ${(steady.joinsPerSecond / tls).toFixed(2)}x (goal >= 0.5x)`);
console.log(
  `  latency p50 / p95 / p99     ${steady.callMs(0.5).toFixed(0)} / ${steady.callMs(0.95).toFixed(0)} / ${steady.callMs(0.99).toFixed(0)} ms (goal p99 <= 250 ms)`,
);
console.log(`  failures                    ${steady.failed.length}`);
const perJoin = (ms: number | undefined): string =>
  ms === undefined ? 'n/a' : `${(ms / steady.joined.length).toFixed(1)} ms`;
const cpu = steady.cpu;
const totalCpu = (cpu.service ?? 0) + cpu.nodes + (cpu.controlPlane ?? 0) + cpu.driver;
console.log(
  `  CPU per join                JoinService ${perJoin(cpu.service)}, nodes ${perJoin(cpu.nodes)}, control plane (etcd, kube-apiserver, controllers) ${perJoin(cpu.controlPlane)}, registry + driver ${perJoin(cpu.driver)}; total ${perJoin(totalCpu)}`,
);
console.log(`  API server                  ${steadyWrites} (warm-up and steady storms together)`);
console.log(
  `  CPU per raw handshake       ${tlsCpuMs.toFixed(1)} ms (both ends): a join costs ${(totalCpu / steady.joined.length / tlsCpuMs).toFixed(1)} handshakes of CPU on these 2 shared cores`,
);

// 2. Growth: N nodes at once.
console.log('\nGrowth: N nodes start joining at the same instant (goal at 500: all join, 0 failures, p99 <= 2 s)');
for (const n of GROWTH) {
  let queued = 0;
  let handshakes = '';
  let apiWrites = '';
  const result = await withCluster(
    ekCa,
    identities.slice(0, n),
    async (cluster) => {
      const storm = await cluster.storm({
        processes: GROWTH_NODE_PROCESSES,
        // Nodes the service has not accepted yet wait in the kernel's queue, unseen by it.
        during: async () => {
          const sampler = setInterval(() => {
            void acceptQueueLength(cluster.port).then((waiting) => {
              queued = Math.max(queued, waiting ?? 0);
            });
          }, ACCEPT_QUEUE_SAMPLE_MS);
          await new Promise((resolve) => setTimeout(resolve, ACCEPT_QUEUE_WINDOW_MS));
          clearInterval(sampler);
        },
      });
      handshakes = handshakeQuantiles(await cluster.metrics());
      apiWrites = await secretWrites(cluster);
      return storm;
    },
    { cpuProfileDir: process.env['BENCH_CPU_PROF'] },
  );
  console.log(`  N=${String(n).padStart(3)}: ${summary(result)}`);
  console.log(
    `         at most ${queued} connections waited in the join port's kernel accept queue (first ${ACCEPT_QUEUE_WINDOW_MS / 1000} s)`,
  );
  console.log(`         TLS handshakes, from the accept (the service's histogram): ${handshakes}`);
  console.log(`         ${apiWrites}`);
  // Which calls make the tail: a storm's first calls share the CPU with every node's handshake.
  const slowest = [...result.joined]
    .sort((a, b) => (b.callMs ?? 0) - (a.callMs ?? 0))
    .slice(0, Math.max(1, Math.ceil(result.joined.length / 100)));
  const firstTries = slowest.filter((o) => o.attempts === 1).length;
  const lastJoined = Math.max(...slowest.map((o) => o.joinedAfterMs ?? 0));
  console.log(
    `         slowest 1% of calls: ${firstTries} of ${slowest.length} were first attempts; all joined by ${(lastJoined / 1000).toFixed(1)} s`,
  );
}

// 3. The JoinService process killed during a storm and started again.
const killed = await withCluster(ekCa, identities.slice(0, FAULT_NODES), async (cluster) => {
  let restartMs = 0;
  const result = await cluster.storm({
    processes: 2,
    during: async () => {
      while ((await cluster.ticketsIssued()) < KILL_AFTER_TICKETS)
        await new Promise((resolve) => setTimeout(resolve, 20));
      const killedAt = performance.now();
      await cluster.killService();
      await cluster.startService();
      restartMs = performance.now() - killedAt;
    },
  });
  return {
    result,
    audit: await cluster.auditJoins(result.outcomes),
    restartMs,
    writes: await secretWrites(cluster),
  };
});
console.log(
  `\nJoinService SIGKILLed during a ${FAULT_NODES}-node storm (after ${KILL_AFTER_TICKETS} tickets), back in ${killed.restartMs.toFixed(0)} ms:`,
);
console.log(`  ${summary(killed.result)}`);
console.log(`  ${killed.writes}`);
console.log(
  `  token Secrets written: ${killed.audit.tokenSecrets}; tickets in another node's name: ${killed.audit.ticketsForAnotherNode.length}`,
);

// 4. The API server silent for 10 s during a storm.
const silent = await withCluster(
  ekCa,
  identities.slice(0, FAULT_NODES),
  async (cluster) => {
    const result = await cluster.storm({
      processes: 2,
      during: async () => {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        cluster.silenceApi();
        await new Promise((resolve) => setTimeout(resolve, 10_000));
        cluster.resumeApi();
      },
    });
    return { result, audit: await cluster.auditJoins(result.outcomes), writes: await secretWrites(cluster) };
  },
  { silenceableApi: true },
);
console.log(`\nAPI server silent for 10 s (from 1 s into a ${FAULT_NODES}-node storm):`);
console.log(`  ${summary(silent.result)}`);
console.log(`  ${silent.writes}`);
console.log(
  `  token Secrets written: ${silent.audit.tokenSecrets}; tickets in another node's name: ${silent.audit.ticketsForAnotherNode.length}`,
);
console.log(`\nload average at the end: ${loadavg()[0]?.toFixed(1) ?? '?'}`);
console.log(
  '\nnote: the service, the node processes and the real control plane share the same 2 cores; the nodes TPMs are software.',
);
