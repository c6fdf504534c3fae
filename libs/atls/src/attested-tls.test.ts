import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { connect as netConnect } from 'node:net';
import { connect, createSecureContext, createServer } from 'node:tls';
import type { SecureContext, Server as TlsServer } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import {
  AttestationError,
  TpmIssuer,
  TpmValidator,
  componentDigest,
  expectedMeasurements,
  measureBoot,
} from '@constellation/attestation';
import type { BootComponent, Issuer } from '@constellation/attestation';
import { RecoveryServiceClient, RecoveryServiceService } from '@constellation/proto';
import type { RecoverResponse } from '@constellation/proto';
import { startSwtpm, withTimeout } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AttestedChannelCredentials } from './attested-channel.js';
import { AttestedTlsServer } from './attested-tls-server.js';
import { certificateToPem, createCertificate, readCertificateFields } from './certificate.js';
import { ATLS_ROOT_NAME, atlsPublicRoot } from './public-root.js';
import { spkiUserData } from './spki-binding.js';

const components: BootComponent[] = [
  { pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bundle v1') },
];
const goodValidator = new TpmValidator({
  variant: 'qemu-vtpm',
  measurements: expectedMeasurements(components, [9, 15]),
});
const wrongValidator = new TpmValidator({
  variant: 'qemu-vtpm',
  measurements: expectedMeasurements([{ ...components[0]!, digest: componentDigest('bundle v2') }], [9, 15]),
});

let swtpm: Swtpm;
let tpm: Tpm;
let issuer: Issuer;
let handlerCalls = 0;
let grpcServer: grpc.Server;
let server: AttestedTlsServer;
let port: number;

beforeAll(async () => {
  swtpm = await startSwtpm();
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  await measureBoot(tpm, components);
  issuer = new TpmIssuer(tpm);
  grpcServer = new grpc.Server();
  grpcServer.addService(RecoveryServiceService, {
    recover: (_call: unknown, callback: grpc.sendUnaryData<RecoverResponse>) => {
      handlerCalls++;
      callback(null, { diskUuid: 'uuid', clusterIdHex: 'id' });
    },
  });
  server = new AttestedTlsServer(grpcServer, { issuer });
  port = await server.listen(0, '127.0.0.1');
});

afterAll(async () => {
  await server.close();
  grpcServer.forceShutdown();
  await tpm.close();
  await swtpm.stop();
});

const clients: grpc.Client[] = [];
const extraServers: TlsServer[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await Promise.all(extraServers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

function dial(target: number, credentials: AttestedChannelCredentials): RecoveryServiceClient {
  const client = new RecoveryServiceClient(`127.0.0.1:${target}`, credentials.credentials, credentials.channelOptions);
  clients.push(client);
  return client;
}

function recover(client: RecoveryServiceClient): Promise<RecoverResponse> {
  return withTimeout(
    new Promise((resolve, reject) => {
      client.recover(
        { stateDiskKey: Buffer.alloc(32), measurementSecret: Buffer.alloc(32) },
        new grpc.Metadata(),
        { deadline: Date.now() + 10_000 },
        (err, res) => {
          if (err) reject(err);
          else resolve(res);
        },
      );
    }),
    15_000,
    'recover RPC',
  );
}

/** A TLS server whose certificate comes from `makeContext(serverName)`: an attacker's endpoint. */
async function rogueServer(makeContext: (serverName: string) => Promise<SecureContext>): Promise<number> {
  const rogue = createServer({
    minVersion: 'TLSv1.3',
    ALPNProtocols: ['h2'],
    SNICallback: (name, done) => {
      makeContext(name).then(
        (ctx) => {
          done(null, ctx);
        },
        (err: unknown) => {
          done(err as Error, undefined);
        },
      );
    },
  });
  extraServers.push(rogue);
  await new Promise<void>((resolve) => rogue.listen(0, '127.0.0.1', resolve));
  const address = rogue.address();
  return typeof address === 'object' && address !== null ? address.port : 0;
}

/** A root-signed certificate for a fresh key, with whatever extensions the attacker likes. */
function rogueContext(
  extensions: { oid: string; critical: boolean; value: Buffer }[],
  rootSigned = true,
): { context: SecureContext; spki: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const root = atlsPublicRoot();
  const cert = createCertificate({
    subjectKey: publicKey,
    subjectName: 'rogue',
    signerKey: rootSigned ? root.privateKey : privateKey,
    issuerName: rootSigned ? ATLS_ROOT_NAME : 'rogue',
    extensions,
  });
  return {
    context: createSecureContext({
      key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
      cert: certificateToPem(cert),
    }),
    spki: publicKey.export({ type: 'spki', format: 'der' }),
  };
}

const QEMU_OID = '1.3.9900.5.1';

describe('attested TLS (CLI to node) over real TLS with a real swtpm', () => {
  it('lets a client with the right measurements call the server, verifying once per connection', async () => {
    const credentials = new AttestedChannelCredentials([goodValidator]);
    const client = dial(port, credentials);
    const before = handlerCalls;
    for (let i = 0; i < 5; i++) await recover(client);
    expect(handlerCalls - before).toBe(5);
    expect(credentials.handshakeCount).toBe(1);
    expect(credentials.result?.pcrs.get(15)).toEqual(Buffer.alloc(32));
  });

  it('with wrong measurements, no RPC reaches the handler and the failure names the PCR', async () => {
    const credentials = new AttestedChannelCredentials([wrongValidator]);
    const before = handlerCalls;
    await expect(recover(dial(port, credentials))).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    expect(handlerCalls).toBe(before);
    expect(credentials.failure).toBeInstanceOf(AttestationError);
    expect((credentials.failure as AttestationError).reason).toBe('measurements');
    expect(credentials.failure?.message).toMatch(/PCR 9: expected [0-9a-f]{64}, actual [0-9a-f]{64}/);
  });

  it('refuses to reuse a nonce when the channel reconnects', async () => {
    const credentials = new AttestedChannelCredentials([goodValidator]);
    await recover(dial(port, credentials));
    const second = dial(port, credentials); // same credentials: same nonce in SNI
    await expect(recover(second)).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    expect(credentials.failure?.message).toMatch(/nonce already used/);
  });

  it('rejects an attestation replayed from an earlier connection', async () => {
    const rogue = await rogueServer(async () => {
      // The attacker recorded a genuine attestation made for an earlier nonce and its own key.
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const document = await issuer.issue(
        spkiUserData(publicKey.export({ type: 'spki', format: 'der' })),
        randomBytes(32),
      );
      const cert = createCertificate({
        subjectKey: publicKey,
        subjectName: 'replay',
        signerKey: atlsPublicRoot().privateKey,
        issuerName: ATLS_ROOT_NAME,
        extensions: [{ oid: QEMU_OID, critical: false, value: document }],
      });
      return createSecureContext({
        key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
        cert: certificateToPem(cert),
      });
    });
    const credentials = new AttestedChannelCredentials([goodValidator]);
    await expect(recover(dial(rogue, credentials))).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    expect((credentials.failure as AttestationError).reason).toBe('nonce');
  });

  it("rejects a genuine node's attestation relayed in a man-in-the-middle's certificate", async () => {
    const rogue = await rogueServer(async (serverName) => {
      // Forward the client's nonce to the genuine node and steal its attestation.
      const genuine = await new Promise<Buffer>((resolve, reject) => {
        const socket = connect(
          {
            host: '127.0.0.1',
            port,
            servername: serverName,
            ca: atlsPublicRoot().certificatePem,
            ALPNProtocols: ['h2'],
            checkServerIdentity: () => undefined,
          },
          () => {
            resolve(socket.getPeerX509Certificate()?.raw ?? Buffer.alloc(0));
            socket.destroy();
          },
        );
        socket.once('error', reject);
      });
      const stolen = readCertificateFields(genuine).extensions.find((ext) => ext.oid === QEMU_OID)!;
      return rogueContext([stolen]).context;
    });
    const credentials = new AttestedChannelCredentials([goodValidator]);
    await expect(recover(dial(rogue, credentials))).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    expect((credentials.failure as AttestationError).reason).toBe('user-data');
  });

  it('rejects a server whose certificate has no attestation extension', async () => {
    const rogue = await rogueServer(() => Promise.resolve(rogueContext([]).context));
    const credentials = new AttestedChannelCredentials([goodValidator]);
    await expect(recover(dial(rogue, credentials))).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    expect(credentials.failure?.message).toMatch(/carries no attestation for an accepted variant: qemu-vtpm/);
  });

  it('rejects a self-signed certificate outright, even one carrying an attestation (no downgrade to unverified TLS)', async () => {
    const rogue = await rogueServer(async () => {
      const fake = rogueContext([], false);
      const document = await issuer.issue(spkiUserData(fake.spki), randomBytes(32));
      return rogueContext([{ oid: QEMU_OID, critical: false, value: document }], false).context;
    });
    const credentials = new AttestedChannelCredentials([goodValidator]);
    const before = handlerCalls;
    await expect(recover(dial(rogue, credentials))).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    expect(credentials.result).toBeUndefined();
    expect(handlerCalls).toBe(before);
  });

  it('closes connections that stall their handshake once the handshake timeout passes (attacker 3)', async () => {
    const stalling = new AttestedTlsServer(new grpc.Server(), { issuer, handshakeTimeoutMs: 300 });
    const stallingPort = await stalling.listen(0, '127.0.0.1');
    try {
      const opened = performance.now();
      const lifetimes = await withTimeout(
        Promise.all(
          [Buffer.alloc(0), Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00])].map(
            (bytes) =>
              new Promise<number>((resolve) => {
                const socket = netConnect(stallingPort, '127.0.0.1', () => {
                  if (bytes.length > 0) socket.write(bytes);
                });
                socket.on('error', () => undefined);
                socket.on('close', () => {
                  resolve(performance.now() - opened);
                });
              }),
          ),
        ),
        10_000,
        'the server to close stalled connections',
      );
      expect(Math.min(...lifetimes)).toBeGreaterThanOrEqual(250);
    } finally {
      await stalling.close(100);
    }
  });

  it('refuses a TLS client that sends no nonce', async () => {
    const error = await new Promise<Error | undefined>((resolve) => {
      const socket = connect(
        { host: '127.0.0.1', port, servername: 'node.example', rejectUnauthorized: false, ALPNProtocols: ['h2'] },
        () => {
          socket.destroy();
          resolve(undefined);
        },
      );
      socket.once('error', resolve);
    });
    expect(error).toBeInstanceOf(Error);
  });
});
