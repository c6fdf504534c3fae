// Attested handshakes per second (server-attests aTLS, CLI to node) next to plain mutual-TLS
// handshakes per second, measured in the same run on the same machine. Each "handshake" is a new
// gRPC channel: TCP + TLS 1.3 (+ attestation and its verification) + one unary RPC.
import { generateKeyPairSync } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { TpmIssuer, TpmValidator } from '@constellation/attestation';
import { DummyIssuer, DummyValidator } from '@constellation/attestation/testing';
import type { Issuer, Validator } from '@constellation/attestation';
import {
  AttestationLimits,
  AttestedChannelCredentials,
  AttestedTlsServer,
  atlsPublicRoot,
  issueFromPublicRoot,
} from '@constellation/atls';
import { RecoveryServiceClient, RecoveryServiceService } from '@constellation/proto';
import type { RecoverResponse } from '@constellation/proto';
import { startSwtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';

const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 300);
const CONCURRENCY = Number(process.env['BENCH_CONCURRENCY'] ?? 16);

function service(): grpc.Server {
  const server = new grpc.Server();
  server.addService(RecoveryServiceService, {
    recover: (_call: unknown, callback: grpc.sendUnaryData<RecoverResponse>) => {
      callback(null, { diskUuid: 'bench', clusterIdHex: '' });
    },
  });
  return server;
}

function call(client: RecoveryServiceClient): Promise<void> {
  return new Promise((resolve, reject) => {
    client.recover(
      { stateDiskKey: Buffer.alloc(0), measurementSecret: Buffer.alloc(0) },
      new grpc.Metadata(),
      { deadline: Date.now() + 30_000 },
      (err) => {
        if (err) reject(err);
        else resolve();
      },
    );
  });
}

/** Runs `connect` CONNECTIONS times, CONCURRENCY at a time; returns connections per second. */
async function rate(connect: () => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < CONNECTIONS) await connect();
    }),
  );
  return CONNECTIONS / ((performance.now() - started) / 1000);
}

function leafFor(name: string): { key: Buffer; cert: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    key: Buffer.from(privateKey.export({ type: 'pkcs8', format: 'pem' })),
    cert: Buffer.from(issueFromPublicRoot(publicKey, name)),
  };
}

async function attestedRate(issuer: Issuer, validator: Validator): Promise<number> {
  const server = service();
  // The bench is one client opening many connections: lift the per-peer bound that would refuse it.
  const atls = new AttestedTlsServer(server, {
    issuer,
    limits: new AttestationLimits({ maxConcurrent: CONCURRENCY, perPeer: CONCURRENCY }),
  });
  const port = await atls.listen(0, '127.0.0.1');
  try {
    return await rate(async () => {
      const credentials = new AttestedChannelCredentials([validator]);
      const client = new RecoveryServiceClient(
        `127.0.0.1:${port}`,
        credentials.credentials,
        credentials.channelOptions,
      );
      try {
        await call(client);
      } finally {
        client.close();
      }
    });
  } finally {
    await atls.close();
    server.forceShutdown();
  }
}

async function mutualTlsRate(): Promise<number> {
  const root = Buffer.from(atlsPublicRoot().certificatePem);
  const serverLeaf = leafFor('server');
  const clientLeaf = leafFor('client');
  const server = service();
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      '127.0.0.1:0',
      grpc.ServerCredentials.createSsl(root, [{ private_key: serverLeaf.key, cert_chain: serverLeaf.cert }], true),
      (err, bound) => {
        if (err) reject(err);
        else resolve(bound);
      },
    );
  });
  try {
    return await rate(async () => {
      const credentials = grpc.credentials.createSsl(root, clientLeaf.key, clientLeaf.cert, {
        checkServerIdentity: () => undefined,
      });
      const client = new RecoveryServiceClient(`127.0.0.1:${port}`, credentials, {
        'grpc.use_local_subchannel_pool': 1,
        'grpc.ssl_target_name_override': 'bench.local',
      });
      try {
        await call(client);
      } finally {
        client.close();
      }
    });
  } finally {
    server.forceShutdown();
  }
}

const swtpm = await startSwtpm();
const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
try {
  const rows: [string, number][] = [
    ['plain mutual TLS (fixed certificates)', await mutualTlsRate()],
    ['aTLS, dummy attestation (cert per connection)', await attestedRate(new DummyIssuer(), new DummyValidator())],
    [
      'aTLS, qemu-vtpm attestation from swtpm',
      await attestedRate(new TpmIssuer(tpm), new TpmValidator({ variant: 'qemu-vtpm', measurements: new Map() })),
    ],
  ];
  console.log(
    `\nNew gRPC connections per second (each: TCP + TLS 1.3 + one RPC), ${CONNECTIONS} connections, ${CONCURRENCY} concurrent`,
  );
  for (const [label, perSecond] of rows) console.log(`${label.padEnd(48)} ${perSecond.toFixed(1).padStart(8)} /s`);
} finally {
  await tpm.close();
  await swtpm.stop();
}
