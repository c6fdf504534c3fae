// `npm run bench`: many simulated nodes against one JoinService, next to the raw mutual-TLS
// handshake rate measured in the same run. Each node has a real swtpm manufactured with an EK
// certificate; each join is the whole tpm2-ek flow: EK certificate path, credential activation
// on the node's TPM, instance registry lookup, a fresh quote and a fresh CSR. Prints figures;
// asserts nothing.
import { generateKeyPairSync } from 'node:crypto';
import { connect, createServer } from 'node:tls';
import { performance } from 'node:perf_hooks';
import { atlsPublicRoot, issueFromPublicRoot } from '@constellation/atls';
import { MemoryLogger } from '@constellation/logger/testing';
import { startJoinFixture } from './join-service.fixture.js';

const TPMS = Number(process.env['BENCH_TPMS'] ?? 12);
const JOINS = Number(process.env['BENCH_JOINS'] ?? 240);
const HANDSHAKES = Number(process.env['BENCH_HANDSHAKES'] ?? 300);

function leaf(name: string): { key: string; cert: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    cert: issueFromPublicRoot(publicKey, name),
  };
}

/** Mutual TLS 1.3 handshakes per second over loopback, `concurrency` at a time. */
async function mutualTlsRate(total: number, concurrency: number): Promise<number> {
  const ca = atlsPublicRoot().certificatePem;
  const server = createServer(
    { ...leaf('server'), ca, requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.3' },
    (socket) => socket.end(),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const client = leaf('client');
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < total) {
        await new Promise<void>((resolve, reject) => {
          const socket = connect(
            { host: '127.0.0.1', port, ...client, ca, servername: 'bench.local', checkServerIdentity: () => undefined },
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
  const rate = total / ((performance.now() - started) / 1000);
  await new Promise((resolve) => server.close(resolve));
  return rate;
}

// Each simulated node asks for many tickets here, so the per-machine budget is lifted.
const fixture = await startJoinFixture(new MemoryLogger(), { ticketBudget: { burst: JOINS, refillMs: 1_000 } });
const booting = performance.now();
const booted = await Promise.allSettled(
  Array.from({ length: TPMS }, (_, i) => fixture.node(`bench-${i}`, `10.43.${Math.floor(i / 250)}.${(i % 250) + 1}`)),
);
const nodes = booted.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
const bootFailure = booted.find((result) => result.status === 'rejected');
if (bootFailure !== undefined) {
  await Promise.all(nodes.map((n) => n.stop()));
  await fixture.close();
  throw new Error(`${TPMS - nodes.length} of ${TPMS} simulated nodes did not boot`, { cause: bootFailure.reason });
}
const bootSeconds = (performance.now() - booting) / 1000;
try {
  const latencies: number[] = [];
  let failures = 0;
  let firstFailure: string | undefined;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    nodes.map(async (node) => {
      while (next++ < JOINS) {
        const t = performance.now();
        try {
          await node.requestJoin(fixture.client);
          latencies.push(performance.now() - t);
        } catch (err) {
          failures++;
          firstFailure ??= err instanceof Error ? err.message : JSON.stringify(err);
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number): string =>
    (latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN).toFixed(1);
  const tls = await mutualTlsRate(HANDSHAKES, TPMS);
  console.log(`\nJoinService under load: ${JOINS} joins from ${TPMS} concurrent simulated nodes`);
  console.log(
    fixture.settings.attestationVariant === 'tpm2-ek'
      ? "each join: tpm2-ek = EK certificate chain + credential activation (TPM2_ActivateCredential on the node's swtpm) + instance registry lookup + swtpm quote + fresh CSR"
      : `each join: ${fixture.settings.attestationVariant} (no credential activation) = swtpm quote + fresh CSR`,
  );
  console.log(`joins per second            ${(latencies.length / seconds).toFixed(1)}`);
  console.log(`latency p50 / p95 / p99 ms  ${at(0.5)} / ${at(0.95)} / ${at(0.99)}`);
  console.log(
    `failures                    ${failures}${firstFailure === undefined ? '' : ` (first: ${firstFailure})`}`,
  );
  console.log(`raw mutual-TLS handshakes   ${tls.toFixed(1)} /s (same machine, same run, ${TPMS} concurrent)`);
  console.log(
    `setup (not timed above)     ${TPMS} swtpms manufactured with EK certificates and booted in ${bootSeconds.toFixed(1)} s`,
  );
  console.log('note: nodes, swtpms and the service share the same 2 cores, so these are lower bounds for the service.');
} finally {
  await Promise.all(nodes.map((n) => n.stop()));
  await fixture.close();
}
