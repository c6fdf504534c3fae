import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import {
  TpmIssuer,
  componentDigest,
  createAttestationVerifier,
  expectedMeasurements,
  measureBoot,
  pemCertificatesToDer,
} from '@constellation/attestation';
import type { BootComponent, RootedIdentity } from '@constellation/attestation';
import {
  ActivationServiceClient,
  HealthStatus,
  JoinServiceClient,
  JoinServiceService,
  createGrpcServer,
} from '@constellation/proto';
import type {
  ActivateResponse,
  AttestationChallenge,
  Credential,
  IssueJoinTicketRequest,
  IssueJoinTicketResponse,
} from '@constellation/proto';
import { startSwtpm, useTestEkCa } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttestedTlsServer } from './attested-tls-server.js';
import { readCertificateFields } from './certificate.js';
import { challengeUserData } from './challenge-binding.js';
import { CHALLENGE_PROTOCOL_VERSION } from './challenge-messages.js';
import { serveChallenge } from './challenge-server.js';
import { nonceToServerName } from './nonce-server-name.js';
import { atlsPublicRoot } from './public-root.js';
import { ephemeralKey } from './seal.js';
import { serviceChannelCredentials, serviceServerCredentials } from './service-tls.js';

/*
 * Attack (issue 42, item 1): a genuine node is an activation oracle. Its verify endpoint (an
 * attested-TLS server, up for as long as the node runs) activated any credential made for the
 * node's AK and answered a proof for a nonce the caller chose, with the same construction and
 * label as a join's. A stranger without a TPM replays the node's public hello to a JoinService,
 * takes the credential and nonce of the challenge to the node's verify endpoint, and answers the
 * challenge with that proof and the quote from the endpoint's certificate. Only the quote's
 * user-data binding stopped it. Now each protocol has its own proof label, and the aTLS Activate
 * nonce must be the connection's own (SNI) nonce.
 */

const image: BootComponent[] = [{ pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('v1') }];
const ca = useTestEkCa();
let swtpm: Swtpm;
let tpm: Tpm;
let victim: RootedIdentity;
let roots: Buffer[];
let endpoint: { port: number; close(): Promise<void> };
let joinService: { client: JoinServiceClient; close(): void };

beforeAll(async () => {
  roots = pemCertificatesToDer(await readFile(ca().rootCertPath, 'utf8'));
  swtpm = await startSwtpm({ manufacture: { ca: ca(), vmid: 'worker-5' } });
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  await measureBoot(tpm, image);
  const issuer = await TpmIssuer.rooted(tpm, {
    ekIntermediates: pemCertificatesToDer(await readFile(ca().intermediateCertPath, 'utf8')),
  });
  if (issuer.rooted === undefined) throw new Error('the victim issuer is not rooted');
  victim = issuer.rooted;
  // The victim's verify endpoint, as the bootstrapper serves it after joining.
  const server = createGrpcServer();
  new HealthStatus({ '': 'SERVING' }).addTo(server);
  const atls = new AttestedTlsServer(server, { issuer });
  endpoint = {
    port: await atls.listen(0, '127.0.0.1'),
    close: async () => {
      await atls.close(100);
      server.forceShutdown();
    },
  };
  joinService = await startJoinService();
}, 60_000);

afterAll(async () => {
  joinService.close();
  await endpoint.close();
  await tpm.close();
  await swtpm.stop();
});

/** A JoinService-like server: the node's image, EK certificates to the test CA, credential activation. */
async function startJoinService(): Promise<{ client: JoinServiceClient; close(): void }> {
  const server = new grpc.Server();
  const verifier = createAttestationVerifier({
    variant: 'tpm2-ek',
    measurements: expectedMeasurements(image, [9, 15]),
    ekRoots: roots,
  });
  server.addService(JoinServiceService, {
    issueJoinTicket: (call: grpc.ServerDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>) => {
      serveChallenge(call, {
        validators: [verifier.validator],
        ...(verifier.identity === undefined ? {} : { identity: verifier.identity }),
        handle: () => Promise.resolve(Buffer.from('a join ticket')),
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
  return {
    client,
    close: () => {
      client.close();
      server.forceShutdown();
    },
  };
}

/**
 * The stranger's own connection to the victim's verify endpoint: any nonce it likes in SNI, no
 * check of the server, and the attestation the server's certificate carries kept.
 */
function strangerConnection(sniNonce: Buffer): { client: ActivationServiceClient; attestation: () => Buffer } {
  let attestation: Buffer | undefined;
  const credentials = grpc.credentials.createSsl(Buffer.from(atlsPublicRoot().certificatePem), null, null, {
    checkServerIdentity: (_host: string, cert: PeerCertificate) => {
      attestation = readCertificateFields(cert.raw).extensions.find((ext) => ext.oid === '1.3.9900.5.100')?.value;
      return undefined;
    },
  });
  const client = new ActivationServiceClient(`127.0.0.1:${endpoint.port}`, credentials, {
    'grpc.ssl_target_name_override': nonceToServerName(sniNonce),
    'grpc.use_local_subchannel_pool': 1,
  });
  return {
    client,
    attestation: () => {
      if (attestation === undefined) throw new Error('no attestation seen');
      return attestation;
    },
  };
}

function activate(client: ActivationServiceClient, credential: Credential, nonce: Buffer): Promise<ActivateResponse> {
  return new Promise((resolve, reject) => {
    client.activate({ credential, nonce }, new grpc.Metadata(), { deadline: Date.now() + 10_000 }, (err, answer) => {
      if (err === null) resolve(answer);
      else reject(err);
    });
  });
}

describe("a genuine node's verify endpoint as an activation oracle", () => {
  it("a proof from the verify endpoint's Activate is refused by a join challenge, naming the protocol mismatch", async () => {
    const stream = joinService.client.issueJoinTicket({ deadline: Date.now() + 20_000 });
    const failure = new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
    const challenge = new Promise<AttestationChallenge>((resolve) => {
      stream.on('data', (message: IssueJoinTicketResponse) => {
        if (message.step?.$case === 'challenge') resolve(message.step.value);
      });
    });
    // The victim's hello is public: its EK certificate chain and its AK.
    stream.write({
      step: {
        $case: 'hello',
        value: {
          attestationVariant: 'tpm2-ek',
          protocolVersion: CHALLENGE_PROTOCOL_VERSION,
          akPublic: victim.akPublic,
          identity: victim.identity,
          serviceNonce: Buffer.alloc(0),
        },
      },
    });
    const { nonce, credential } = await challenge;
    if (credential === undefined) throw new Error('the challenge carries no credential');
    // The stranger connects to the victim's verify endpoint with the challenge's nonce in SNI, so
    // the Activate nonce is the connection's own, and has the victim's TPM activate the credential.
    const stranger = strangerConnection(nonce);
    try {
      const { proof } = await activate(stranger.client, credential, nonce);
      // The answer: the victim's quote for this nonce (from the endpoint's certificate) and the proof.
      const key = ephemeralKey();
      const request = Buffer.from('join as worker-5');
      expect(challengeUserData(key.publicKey, request)).toHaveLength(32);
      stream.write({
        step: {
          $case: 'attested',
          value: {
            attestation: stranger.attestation(),
            ephemeralPublicKey: key.publicKey,
            request,
            activationProof: proof,
          },
        },
      });
      const refused = await failure;
      expect(refused.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(refused.details).toBe(
        'attestation rejected: activation proof protocol mismatch: the proof was made for an attested-TLS server activation (constellation/atls/server-activation/v1), not for a join challenge (constellation/join/activation/v1); a proof made in one protocol is refused in every other',
      );
    } finally {
      stream.cancel();
      stranger.client.close();
    }
  });

  it("refuses an Activate whose nonce is not the connection's own, before the TPM works", async () => {
    const sni = randomBytes(32);
    const stranger = strangerConnection(sni);
    const garbage = { credentialBlob: randomBytes(68), encryptedSecret: randomBytes(256) };
    try {
      const err = await activate(stranger.client, garbage, randomBytes(32)).then(
        () => undefined,
        (e: unknown) => e as grpc.ServiceError,
      );
      expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err?.details).toBe(
        "the activation nonce must be this connection's aTLS nonce (the one in its server name): a proof is bound to the connection whose attestation the client checked",
      );
      // The connection's own nonce reaches the TPM, which refuses the garbage credential.
      const own = await activate(stranger.client, garbage, sni).then(
        () => undefined,
        (e: unknown) => e as grpc.ServiceError,
      );
      expect(own?.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(own?.details).toMatch(/^this TPM cannot activate the credential/);
    } finally {
      stranger.client.close();
    }
  });
});
