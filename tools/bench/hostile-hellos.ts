// `npm run bench`: the node's own quote latency (what init and join wait for), idle and while
// 300 hostile ClientHellos are in flight against its attested endpoint, in one run. Each hostile
// hello carries a well-formed nonce, so without bounds each would cost a key generation and a
// TPM quote. Goal: at most 2 × idle. Prints figures; asserts nothing.
import { randomBytes } from 'node:crypto';
import { connect } from 'node:tls';
import { performance } from 'node:perf_hooks';
import { fork } from 'node:child_process';
import * as grpc from '@grpc/grpc-js';
import { AttestedTlsServer, nonceToServerName } from '@constellation/atls';
import { TpmIssuer, measureBoot, componentDigest } from '@constellation/attestation';
import { HealthStatus } from '@constellation/proto';
import { startSwtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';

const HOSTILE = Number(process.env['BENCH_HOSTILE'] ?? 300);
const SAMPLES = Number(process.env['BENCH_SAMPLES'] ?? 60);

// The strangers run in another process, as they would on other machines: their own TLS work must
// not be counted against the node's event loop.
if (process.argv[2] === '--strangers') {
  let stop = false;
  const outcome = { attested: 0, refused: 0 };
  /** One stranger: ClientHello after ClientHello with a fresh, well-formed nonce, until stopped. */
  async function stranger(port: number): Promise<void> {
    while (!stop) {
      await new Promise<void>((resolve) => {
        const socket = connect({
          host: '127.0.0.1',
          port,
          servername: nonceToServerName(randomBytes(32)),
          rejectUnauthorized: false,
          ALPNProtocols: ['h2'],
        });
        socket.once('secureConnect', () => {
          outcome.attested++;
          socket.destroy();
          resolve();
        });
        socket.once('error', () => {
          outcome.refused++;
          socket.destroy();
          resolve();
        });
      });
    }
  }
  const [port, count] = [Number(process.argv[3]), Number(process.argv[4])];
  process.once('message', () => {
    stop = true;
  });
  const running = Promise.all(Array.from({ length: count }, () => stranger(port)));
  process.send?.('flooding');
  await running;
  process.send?.(outcome);
  process.disconnect();
} else {
  const swtpm = await startSwtpm();
  const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  await measureBoot(tpm, [{ pcr: 9, description: 'bootstrapper', digest: componentDigest('bench') }]);
  const issuer = new TpmIssuer(tpm);
  const server = new grpc.Server();
  new HealthStatus({ '': 'SERVING' }).addTo(server);
  const atls = new AttestedTlsServer(server, { issuer });
  const port = await atls.listen(0, '127.0.0.1');

  /** The node's own attestation (foreground), as init and join make it. */
  async function ownQuotes(): Promise<{ median: number; p95: number }> {
    const samples: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const started = performance.now();
      await issuer.issue(randomBytes(32), randomBytes(32));
      samples.push(performance.now() - started);
    }
    samples.sort((a, b) => a - b);
    return {
      median: samples[Math.floor(samples.length / 2)] ?? Number.NaN,
      p95: samples[Math.floor(samples.length * 0.95)] ?? Number.NaN,
    };
  }

  const idle = await ownQuotes();
  const flood = fork(new URL(import.meta.url).pathname, ['--strangers', String(port), String(HOSTILE)]);
  const messages: unknown[] = [];
  let wake: (() => void) | undefined;
  flood.on('message', (m) => {
    messages.push(m);
    wake?.();
  });
  const next = async (): Promise<unknown> => {
    while (messages.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    return messages.shift();
  };
  await next(); // 'flooding': all strangers are sending
  await new Promise((resolve) => setTimeout(resolve, 1_000)); // let the flood build up
  const underAttack = await ownQuotes();
  flood.send('stop');
  const outcome = (await next()) as { attested: number; refused: number };
  await atls.close(100);
  server.forceShutdown();
  await tpm.close();
  await swtpm.stop();

  console.log(`\nThe node's own attestation (AK + TPM2_Quote + PCR read), ${SAMPLES} samples each`);
  console.log(
    `idle                                          median ${idle.median.toFixed(2)} ms   p95 ${idle.p95.toFixed(2)} ms`,
  );
  console.log(
    `${HOSTILE} hostile ClientHellos in flight          median ${underAttack.median.toFixed(2)} ms   p95 ${underAttack.p95.toFixed(2)} ms   (${(underAttack.median / idle.median).toFixed(2)} × idle; goal ≤ 2 ×)`,
  );
  console.log(
    `hostile handshakes meanwhile: ${outcome.attested} attested (bounded: 16 in flight, 2 per peer), ${outcome.refused} refused at once`,
  );
}
