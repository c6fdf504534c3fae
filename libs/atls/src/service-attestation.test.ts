import { generateKeyPairSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import {
  TpmIssuer,
  componentDigest,
  createAttestationVerifier,
  expectedMeasurements,
  measureBoot,
  pemCertificatesToDer,
} from '@constellation/attestation';
import type { BootComponent, Measurements, VerifiedTpmIdentity } from '@constellation/attestation';
import { SoftwareAttester } from '@constellation/attestation/testing';
import { JoinServiceClient, JoinServiceService } from '@constellation/proto';
import type { IssueJoinTicketRequest, IssueJoinTicketResponse } from '@constellation/proto';
import { startSwtpm, useTestEkCa } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceAttestationError, requestWithAttestation } from './challenge-client.js';
import type { ServiceCheck } from './challenge-client.js';
import { certificateToPem, createCertificate } from './certificate.js';
import { serveChallenge } from './challenge-server.js';
import { issuerAttester, serveAttestationAgent, AgentAttester } from './service-attester.js';
import type { ServiceAttester } from './service-attester.js';
import { serviceChannelCredentials, serviceServerCredentials } from './service-tls.js';
import { errorMessage } from '@constellation/errors';

// The service proves itself to the node: a fake JoinService (attacker 1) must not get a node to use
// anything it sends. Real swtpm TPMs manufactured with EK certificates play the node, the genuine
// control plane hosting the JoinService, and a genuine worker.
const image: BootComponent[] = [{ pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('v1') }];
const ca = useTestEkCa();

interface Machine {
  swtpm: Swtpm;
  tpm: Tpm;
  issuer: TpmIssuer;
  hash: string;
}
let node: Machine;
let controlPlane: Machine;
let worker: Machine;
let tamperedControlPlane: Machine;
let roots: Buffer[];
let intermediates: Buffer[];
let handled = 0;

async function machine(name: string, boot: BootComponent[], lock = false): Promise<Machine> {
  const swtpm = await startSwtpm({ manufacture: { ca: ca(), vmid: name } });
  const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  await measureBoot(tpm, boot);
  // A control plane that belongs to a cluster has locked PCR 15 to its cluster ID.
  if (lock) await tpm.pcrEvent(15, Buffer.from('cluster id'));
  const issuer = await TpmIssuer.rooted(tpm, { ekIntermediates: intermediates });
  return { swtpm, tpm, issuer, hash: swtpm.manufactured?.ekPublicKeyHash ?? '' };
}

beforeAll(async () => {
  intermediates = pemCertificatesToDer(await readFile(ca().intermediateCertPath, 'utf8'));
  roots = pemCertificatesToDer(await readFile(ca().rootCertPath, 'utf8'));
  [node, controlPlane, worker, tamperedControlPlane] = await Promise.all([
    machine('node', image),
    machine('control-plane-0', image, true),
    machine('worker-1', image, true),
    machine('control-plane-9', [{ ...image[0]!, digest: componentDigest('v1 + backdoor') }], true),
  ]);
}, 60_000);

afterAll(async () => {
  for (const m of [node, controlPlane, worker, tamperedControlPlane] as (Machine | undefined)[]) {
    await m?.tpm.close();
    await m?.swtpm.stop();
  }
});

/** A JoinService-like server whose host attests with `attester` (or not at all). */
async function service(
  attester: ServiceAttester | undefined,
  credentials: grpc.ServerCredentials = serviceServerCredentials(),
): Promise<{ client: JoinServiceClient; close(): void }> {
  const server = new grpc.Server();
  const verifier = createAttestationVerifier({ variant: 'tpm2-ek', measurements: new Map(), ekRoots: roots });
  server.addService(JoinServiceService, {
    issueJoinTicket: (call: grpc.ServerDuplexStream<IssueJoinTicketRequest, IssueJoinTicketResponse>) => {
      serveChallenge(call, {
        validators: [verifier.validator],
        ...(verifier.identity === undefined ? {} : { identity: verifier.identity }),
        ...(attester === undefined ? {} : { serviceAttester: attester }),
        handle: () => {
          handled++;
          return Promise.resolve(Buffer.from('a ticket the node must not use unless the service proved itself'));
        },
      });
    },
    issueRejoinTicket: (call: grpc.ServerDuplexStream<unknown, unknown>) => {
      call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'not in this test' });
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', credentials, (err, bound) => {
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

/** The node's rule: the service's host runs this image, is locked to a cluster, and is a registered control plane. */
function nodeCheck(ownImage: Measurements = expectedMeasurements(image, [9])): ServiceCheck {
  return {
    verifier: createAttestationVerifier({ variant: 'tpm2-ek', measurements: ownImage, ekRoots: roots }),
    admit: (identity: VerifiedTpmIdentity, result) => {
      if (result.pcrs.get(15)?.equals(Buffer.alloc(32)) !== false)
        return Promise.reject(new Error('its host has not joined any cluster (PCR 15 is zero)'));
      if (identity.ekPublicKeyHash !== controlPlane.hash)
        return Promise.reject(
          new Error(`machine sha256:${identity.ekPublicKeyHash} is not a registered control plane`),
        );
      return Promise.resolve();
    },
  };
}

async function join(
  attester: ServiceAttester | undefined,
  credentials?: grpc.ServerCredentials,
): Promise<Buffer | Error> {
  const s = await service(attester, credentials);
  try {
    return await requestWithAttestation(
      s.client.issueJoinTicket({ deadline: Date.now() + 20_000 }),
      node.issuer,
      Buffer.from('request'),
      nodeCheck(),
    ).catch((err: unknown) => err as Error);
  } finally {
    s.close();
  }
}

describe('the JoinService proves its host before a node uses its answer', () => {
  it('a service on an attested, registered control plane with the same image is trusted', async () => {
    const answer = await join(issuerAttester(controlPlane.issuer));
    expect(answer).toBeInstanceOf(Buffer);
    expect(answer.toString()).toMatch(/^a ticket/);
  });

  it('also through the attestation agent its host serves on a unix socket', async () => {
    const { tempDirForTest } = await import('@constellation/testing');
    const socket = `${await tempDirForTest()}/agent.sock`;
    const agent = await serveAttestationAgent(socket, controlPlane.issuer);
    const attester = new AgentAttester(socket);
    try {
      const { stat } = await import('node:fs/promises');
      expect((await stat(socket)).mode & 0o777).toBe(0o600);
      expect(await join(attester)).toBeInstanceOf(Buffer);
    } finally {
      attester.close();
      await agent.close();
    }
  });

  it('refuses a service that does not attest its host at all, and never opens its answer', async () => {
    const before = handled;
    const err = await join(undefined);
    // The service did answer (its handler ran); the node threw the answer away unopened.
    expect(handled).toBe(before + 1);
    expect(err).toBeInstanceOf(ServiceAttestationError);
    expect(errorMessage(err)).toBe(
      'the service did not attest its host: this node joins only through a JoinService on an attested control-plane node',
    );
  });

  it('trusts the attestation, not the TLS certificate: any certificate serves, none replaces attesting', async () => {
    // A self-signed certificate (not from the public root): the node checks no chain, since one
    // chained to the public root would prove nothing either (anyone holds that root's key).
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const selfSigned = certificateToPem(
      createCertificate({ subjectKey: publicKey, subjectName: 'anyone', signerKey: privateKey, issuerName: 'anyone' }),
    );
    const credentials = (): grpc.ServerCredentials =>
      grpc.ServerCredentials.createSsl(null, [
        {
          private_key: Buffer.from(privateKey.export({ type: 'pkcs8', format: 'pem' })),
          cert_chain: Buffer.from(selfSigned),
        },
      ]);
    expect(await join(issuerAttester(controlPlane.issuer), credentials())).toBeInstanceOf(Buffer);
    expect(errorMessage(await join(undefined, credentials()))).toBe(
      'the service did not attest its host: this node joins only through a JoinService on an attested control-plane node',
    );
  });

  it('refuses a service posing with a genuine control plane EK certificate but no TPM', async () => {
    const fake = new SoftwareAttester({
      claims: expectedMeasurements(image, [9]),
      stolenIdentity: controlPlane.issuer.rooted?.identity,
    });
    const err = await join({
      description: 'software',
      attest: (userData, nonce) => fake.issue(userData, nonce),
      prove: () => Promise.resolve(Buffer.alloc(32)),
      close: () => undefined,
    });
    expect(err).toBeInstanceOf(ServiceAttestationError);
    expect(errorMessage(err)).toBe(
      'the service failed attestation: credential activation failed: the attestation key does not live in the TPM that holds the certified endorsement key',
    );
  });

  it('refuses a service on a genuine machine that is not a registered control plane', async () => {
    const err = await join(issuerAttester(worker.issuer));
    expect(errorMessage(err)).toBe(
      `the service is not trusted: machine sha256:${worker.hash} is not a registered control plane`,
    );
  });

  it('refuses a service whose host runs another image, naming the PCR', async () => {
    const err = await join(issuerAttester(tamperedControlPlane.issuer));
    expect(errorMessage(err)).toMatch(
      /^the service failed attestation: measurements do not match: PCR 9: expected [0-9a-f]{64}, actual [0-9a-f]{64}/,
    );
  });

  it('refuses a service whose host is a genuine control plane that never joined a cluster', async () => {
    const fresh = await machine('control-plane-fresh', image);
    try {
      const err = await join(issuerAttester(fresh.issuer));
      expect(errorMessage(err)).toBe(
        'the service is not trusted: its host has not joined any cluster (PCR 15 is zero)',
      );
    } finally {
      await fresh.tpm.close();
      await fresh.swtpm.stop();
    }
  });
});
