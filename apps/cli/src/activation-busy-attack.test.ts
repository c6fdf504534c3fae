import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import { AttestedChannelCredentials, AttestedTlsServer } from '@constellation/atls';
import { createAttestationVerifier, pemCertificatesToDer } from '@constellation/attestation';
import type { Issuer } from '@constellation/attestation';
import { ActivationServiceClient, InitServiceService } from '@constellation/proto';
import type { InitRequest, InitResponse } from '@constellation/proto';
import { describe, expect, it } from 'vitest';
import { attestedWorkspace } from './attested-workspace.fixture.js';
import { GENUINE_MEASUREMENTS, useGenuineMachine } from './genuine-machine.fixture.js';
import { runInit } from './init-command.js';
import { errorMessage } from '@constellation/errors';

/*
 * Attacker 3 (a stranger, no TPM), found by a red-team pass: a node runs at most two credential
 * activations at once, for everyone together. Two stranger connections, each with one activation
 * that waits on the TPM (its background lane queues behind the node's own TPM work, and a real
 * TPM's EK decryption is slow), take both slots. The operator's `constellation init` is then
 * refused "the TPM is busy ...; retry" with retry-after-ms, and the CLI treated that as final:
 * proveServerIdentity wrapped it in an error without a gRPC code, so init's retry (UNAVAILABLE
 * only) never happened and init failed at once.
 */

const { ekCa, machine } = useGenuineMachine('control-plane-0');
const measurements = GENUINE_MEASUREMENTS;
/** How long each activation waits on the TPM (a TPM busy with the node's own work). */
const TPM_BUSY_MS = 1_500;

/** The genuine node, whose TPM takes TPM_BUSY_MS per activation. */
function slowTpmNode(): Issuer {
  const genuine = machine().issuer;
  const rooted = genuine.rooted;
  if (rooted === undefined) throw new Error('rooted issuer expected');
  return {
    variant: genuine.variant,
    issue: (userData, nonce) => genuine.issue(userData, nonce),
    rooted: {
      identity: rooted.identity,
      akPublic: rooted.akPublic,
      akName: rooted.akName,
      ekPublicKeyHash: rooted.ekPublicKeyHash,
      activate: async (credential) => {
        await new Promise((resolve) => setTimeout(resolve, TPM_BUSY_MS));
        return rooted.activate(credential);
      },
    },
  };
}

describe("strangers take the node's activation slots (attacker 3)", () => {
  it('init gets through when a stranger holds both activation slots: the CLI retries as the node asks', async () => {
    const received: InitRequest[] = [];
    const server = new grpc.Server();
    server.addService(InitServiceService, {
      init: (call: grpc.ServerWritableStream<InitRequest, InitResponse>) => {
        received.push(call.request);
        call.emit('error', { code: grpc.status.PERMISSION_DENIED, details: 'wrong init secret' });
      },
    });
    const atls = new AttestedTlsServer(server, { issuer: slowTpmNode() });
    const port = await atls.listen(0, '127.0.0.1');
    const roots = pemCertificatesToDer(await readFile(ekCa().rootCertPath, 'utf8'));
    // The stranger: two connections, one garbage activation each, started just before the operator.
    const strangers = Array.from({ length: 2 }, () => {
      const verifier = createAttestationVerifier({ variant: 'tpm2-ek', measurements: new Map(), ekRoots: roots });
      const credentials = new AttestedChannelCredentials([verifier.validator]);
      return new ActivationServiceClient(`127.0.0.1:${port}`, credentials.credentials, credentials.channelOptions);
    });
    try {
      const dir = await attestedWorkspace({ port, measurements, ekCa: ekCa(), initSecret: 'secret' });
      await Promise.all(
        strangers.map(
          (c) =>
            new Promise<void>((resolve, reject) => {
              c.waitForReady(Date.now() + 20_000, (err) => {
                if (err) reject(err);
                else resolve();
              });
            }),
        ),
      );
      const garbage = { credentialBlob: randomBytes(68), encryptedSecret: randomBytes(256) };
      const held = strangers.map(
        (c) =>
          new Promise<void>((resolve) => {
            c.activate({ credential: garbage, nonce: randomBytes(32) }, () => {
              resolve();
            });
          }),
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      const lines: string[] = [];
      const outcome = await runInit({
        workspace: dir,
        print: (l) => lines.push(l),
        attempts: 5,
        retryDelayMs: 500,
      }).then(
        () => 'initialised',
        (err: unknown) => errorMessage(err),
      );
      await Promise.all(held);
      process.stdout.write(
        `init while a stranger holds both activation slots: ${outcome}; Init requests that reached the node: ${String(received.length)}; dial attempts: ${String(lines.filter((l) => l.startsWith('dialing')).length)}\n`,
      );
      // The stranger's hold ends after TPM_BUSY_MS; five attempts 500 ms apart outlast it.
      expect(outcome).not.toMatch(/the TPM is busy with other activations/);
      expect(received).toHaveLength(1);
    } finally {
      for (const c of strangers) c.close();
      await atls.close(100);
      server.forceShutdown();
    }
  }, 120_000);
});
