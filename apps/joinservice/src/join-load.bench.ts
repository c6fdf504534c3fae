// `npm run bench`: many simulated nodes (each join a fresh real swtpm attestation and CSR)
// against one JoinService, next to the raw mutual-TLS handshake rate measured in the same run.
// Prints figures; asserts nothing.
import { generateKeyPairSync } from 'node:crypto';
import { connect, createServer } from 'node:tls';
import { performance } from 'node:perf_hooks';
import { atlsPublicRoot, issueFromPublicRoot } from '@constellation/atls';
import { MemoryLogger } from '@constellation/logger';
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

const fixture = await startJoinFixture(new MemoryLogger());
const nodes = await Promise.all(
  Array.from({ length: TPMS }, (_, i) => fixture.node(`bench-${i}`, `10.43.${Math.floor(i / 250)}.${(i % 250) + 1}`)),
);
try {
  const latencies: number[] = [];
  let failures = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    nodes.map(async (node) => {
      while (next++ < JOINS) {
        const t = performance.now();
        try {
          await node.requestJoin(fixture.client);
          latencies.push(performance.now() - t);
        } catch {
          failures++;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number): string =>
    (latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN).toFixed(1);
  const tls = await mutualTlsRate(HANDSHAKES, TPMS);
  console.log(
    `\nJoinService under load: ${JOINS} joins from ${TPMS} concurrent simulated nodes (real swtpm quotes, fresh CSR per join)`,
  );
  console.log(`joins per second            ${(latencies.length / seconds).toFixed(1)}`);
  console.log(`latency p50 / p95 / p99 ms  ${at(0.5)} / ${at(0.95)} / ${at(0.99)}`);
  console.log(`failures                    ${failures}`);
  console.log(`raw mutual-TLS handshakes   ${tls.toFixed(1)} /s (same machine, same run, ${TPMS} concurrent)`);
  console.log('note: nodes, swtpms and the service share the same 2 cores, so these are lower bounds for the service.');
} finally {
  await Promise.all(nodes.map((n) => n.stop()));
  await fixture.close();
}
