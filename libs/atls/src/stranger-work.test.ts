import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import { TpmIssuer, createAttestationVerifier, pemCertificatesToDer } from '@constellation/attestation';
import { ActivationServiceClient, JoinServiceClient, JoinServiceService } from '@constellation/proto';
import type { IssueJoinTicketRequest, IssueJoinTicketResponse } from '@constellation/proto';
import { startSwtpm, useTestEkCa } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttestedChannelCredentials } from './attested-channel.js';
import { AttestedTlsServer } from './attested-tls-server.js';
import { CHALLENGE_PROTOCOL_VERSION } from './challenge-messages.js';
import { serveChallenge } from './challenge-server.js';
import { issuerAttester } from './service-attester.js';
import type { ServiceAttester } from './service-attester.js';
import { serviceChannelCredentials, serviceServerCredentials } from './service-tls.js';

// Attacker 3 (found by the red team): what a stranger with no TPM can make a node's TPM do.
const ca = useTestEkCa();
let swtpm: Swtpm;
let tpm: Tpm;
let host: TpmIssuer;
let roots: Buffer[];

beforeAll(async () => {
  roots = pemCertificatesToDer(await readFile(ca().rootCertPath, 'utf8'));
  swtpm = await startSwtpm({ manufacture: { ca: ca(), vmid: 'control-plane-0' } });
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  host = await TpmIssuer.rooted(tpm);
}, 60_000);

afterAll(async () => {
  await tpm.close();
  await swtpm.stop();
});

describe('work a stranger can cause', () => {
  it('a hello without an EK certificate costs the host TPM no quote', async () => {
    let quotes = 0;
    const inner = issuerAttester(host);
    const counting: ServiceAttester = {
      description: 'counting',
      attest: (userData, nonce) => {
        quotes++;
        return inner.attest(userData, nonce);
      },
      prove: (credential, nonce) => inner.prove(credential, nonce),
      close: () => undefined,
    };
    const verifier = createAttestationVerifier({ variant: 'tpm2-ek', measurements: new Map(), ekRoots: roots });
    const server = new grpc.Server();
    server.addService(JoinServiceService, {
      issueJoinTicket: (call: grpc.ServerDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>) => {
        serveChallenge(call, {
          validators: [verifier.validator],
          ...(verifier.identity === undefined ? {} : { identity: verifier.identity }),
          serviceAttester: counting,
          handle: () => Promise.resolve(Buffer.alloc(0)),
        });
      },
      issueRejoinTicket: (call: grpc.ServerDuplexStream<unknown, unknown>) => {
        call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'not in this test' });
      },
    });
    const port = await new Promise<number>((resolve, reject) => {
      server.bindAsync('127.0.0.1:0', serviceServerCredentials(), (err, bound) => {
        if (err) reject(err);
        else resolve(bound);
      });
    });
    const client = new JoinServiceClient(`127.0.0.1:${port}`, serviceChannelCredentials());
    const hello = (): Promise<grpc.ServiceError> =>
      new Promise((resolve) => {
        const stream = client.issueJoinTicket({ deadline: Date.now() + 10_000 });
        stream.on('error', resolve);
        stream.on('data', () => undefined);
        stream.write({
          step: {
            $case: 'hello',
            value: {
              attestationVariant: 'tpm2-ek',
              protocolVersion: CHALLENGE_PROTOCOL_VERSION,
              akPublic: Buffer.alloc(0),
              serviceNonce: randomBytes(32),
            },
          },
        });
      });
    try {
      const failures = await Promise.all(Array.from({ length: 20 }, hello));
      for (const failure of failures) {
        expect(failure).toMatchObject({
          code: grpc.status.PERMISSION_DENIED,
          details: 'attestation rejected: the node sent no EK certificate',
        });
      }
      expect(quotes).toBe(0);
    } finally {
      client.close();
      server.forceShutdown();
    }
  });

  it('one attested connection buys one credential activation, not a TPM to hammer', async () => {
    const grpcServer = new grpc.Server();
    const atls = new AttestedTlsServer(grpcServer, { issuer: host });
    const port = await atls.listen(0, '127.0.0.1');
    const verifier = createAttestationVerifier({ variant: 'tpm2-ek', measurements: new Map(), ekRoots: roots });
    const credentials = new AttestedChannelCredentials([verifier.validator]);
    const client = new ActivationServiceClient(
      `127.0.0.1:${port}`,
      credentials.credentials,
      credentials.channelOptions,
    );
    const garbage = { credentialBlob: randomBytes(68), encryptedSecret: randomBytes(256) };
    const call = (): Promise<grpc.ServiceError | null> =>
      new Promise((resolve) => {
        // The connection's own nonce: any other is refused before the TPM (activation-oracle-attack.test.ts).
        client.activate({ credential: garbage, nonce: credentials.nonce }, (err) => {
          resolve(err);
        });
      });
    try {
      // The first reaches the TPM (which refuses the garbage); the others never do.
      expect((await call())?.code).toBe(grpc.status.PERMISSION_DENIED);
      const rest = await Promise.all(Array.from({ length: 20 }, call));
      for (const err of rest) {
        expect(err).toMatchObject({
          code: grpc.status.RESOURCE_EXHAUSTED,
          details: 'one credential activation per attested connection; open a new connection to prove the node again',
        });
      }
      expect(credentials.handshakeCount).toBe(1);
    } finally {
      client.close();
      await atls.close(100);
      grpcServer.forceShutdown();
    }
  });
});
