import { createHash } from 'node:crypto';
import { chmod, rm } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import { withUnixSocketPath } from '@constellation/files';
import { activationProof } from '@constellation/attestation';
import type { Issuer, RootedIdentity } from '@constellation/attestation';
import { noopLogger } from '@constellation/logger';
import type { Logger } from '@constellation/logger';
import {
  ActivationServiceClient,
  AttestationAgentServiceClient,
  AttestationAgentServiceService,
  createClient,
  createGrpcServer,
} from '@constellation/proto';
import type { AttestRequest, AttestResponse, Credential } from '@constellation/proto';
import { ActivationBudget, addActivationService } from './activation-service.js';
import { AtlsError } from './errors.js';

const SERVICE_LABEL = Buffer.from('constellation/atls/service/v1');
const MAX_USER_DATA = 64;

/** The user data a service's host attests: binds the key its sealed answer will use. */
export function serviceUserData(servicePublicKey: Uint8Array): Buffer {
  return createHash('sha256').update(SERVICE_LABEL).update(servicePublicKey).digest();
}

/** The host's attestations are all in use; the caller should come back later. */
export class ServiceAttesterBusyError extends Error {
  override readonly name = 'ServiceAttesterBusyError';
}

/** How a service (the JoinService) attests the machine it runs on. */
export interface ServiceAttester {
  readonly description: string;
  /** An attestation document of the host for `userData` and `nonce`. */
  attest(userData: Uint8Array, nonce: Uint8Array): Promise<Buffer>;
  /** Activates a credential made for the host's AK and EK; returns the host proof bound to `nonce`. */
  prove(credential: Credential, nonce: Uint8Array): Promise<Buffer>;
  close(): void;
}

function requireRooted(issuer: Issuer): RootedIdentity {
  if (issuer.rooted === undefined)
    throw new RangeError(`a service can only prove its host with a rooted variant, not "${issuer.variant.name}"`);
  return issuer.rooted;
}

/** A service attester backed by a rooted issuer in the same process (tests, single-binary setups). */
export function issuerAttester(issuer: Issuer): ServiceAttester {
  const rooted = requireRooted(issuer);
  return {
    description: `in-process ${issuer.variant.name} issuer`,
    attest: (userData, nonce) => issuer.issue(userData, nonce),
    prove: async (credential, nonce) =>
      activationProof('host', await rooted.activate(credential), nonce, rooted.akName),
    close: () => undefined,
  };
}

/**
 * The JoinService's view of its host's attestation agent: the control-plane bootstrapper, which
 * owns the TPM, serves it on a local unix socket. Calls are bounded.
 */
export class AgentAttester implements ServiceAttester {
  readonly description: string;
  private readonly agent: AttestationAgentServiceClient;
  private readonly activation: ActivationServiceClient;
  private readonly timeoutMs: number;
  private readonly maxInFlight: number;
  private inFlight = 0;

  /** At most `maxInFlight` agent calls at once: the host's TPM is shared with the node itself. */
  constructor(socketPath: string, timeoutMs = 10_000, maxInFlight = 8) {
    this.maxInFlight = maxInFlight;
    this.description = `attestation agent at ${socketPath}`;
    this.agent = createClient(AttestationAgentServiceClient, `unix:${socketPath}`, grpc.credentials.createInsecure());
    // Shares the agent's channel, which carries the message limits.
    this.activation = createClient(ActivationServiceClient, '', grpc.credentials.createInsecure(), {
      channelOverride: this.agent.getChannel(),
    });
    this.timeoutMs = timeoutMs;
  }

  attest(userData: Uint8Array, nonce: Uint8Array): Promise<Buffer> {
    return this.bounded(() => this.callAttest(userData, nonce));
  }

  prove(credential: Credential, nonce: Uint8Array): Promise<Buffer> {
    return this.bounded(() => this.callActivate(credential, nonce));
  }

  private async bounded<T>(call: () => Promise<T>): Promise<T> {
    if (this.inFlight >= this.maxInFlight) {
      throw new ServiceAttesterBusyError(
        `the service is attesting its host for ${this.inFlight} nodes already; retry shortly`,
      );
    }
    this.inFlight++;
    try {
      return await call();
    } finally {
      this.inFlight--;
    }
  }

  private callAttest(userData: Uint8Array, nonce: Uint8Array): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.agent.attest(
        { userData: Buffer.from(userData), nonce: Buffer.from(nonce) },
        new grpc.Metadata(),
        { deadline: Date.now() + this.timeoutMs },
        (err, res) => {
          if (err) reject(new AtlsError(`${this.description}: ${err.details}`, { cause: err }));
          else resolve(Buffer.from(res.attestation));
        },
      );
    });
  }

  private callActivate(credential: Credential, nonce: Uint8Array): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.activation.activate(
        { credential, nonce: Buffer.from(nonce) },
        new grpc.Metadata(),
        { deadline: Date.now() + this.timeoutMs },
        (err, res) => {
          if (err) reject(new AtlsError(`${this.description}: ${err.details}`, { cause: err }));
          else resolve(Buffer.from(res.proof));
        },
      );
    });
  }

  close(): void {
    this.agent.close();
  }
}

/**
 * Serves the attestation agent for local services on a unix socket (mode 0600): Attest and the
 * ActivationService, both answered by this machine's rooted issuer. Replaces a stale socket.
 */
export async function serveAttestationAgent(
  socketPath: string,
  issuer: Issuer,
  logger: Logger = noopLogger,
): Promise<{ close(): Promise<void> }> {
  const rooted = requireRooted(issuer);
  const server = createGrpcServer();
  server.addService(AttestationAgentServiceService, {
    attest: (
      call: grpc.ServerUnaryCall<AttestRequest, AttestResponse>,
      callback: grpc.sendUnaryData<AttestResponse>,
    ) => {
      const { userData, nonce } = call.request;
      if (userData.length > MAX_USER_DATA || nonce.length !== 32) {
        callback({
          code: grpc.status.INVALID_ARGUMENT,
          details: `user_data must be at most ${MAX_USER_DATA} bytes and nonce 32 bytes`,
        });
        return;
      }
      issuer.issue(userData, nonce).then(
        (attestation) => {
          callback(null, { attestation });
        },
        (err: unknown) => {
          logger.error('attestation agent could not attest', { err });
          callback({ code: grpc.status.INTERNAL, details: 'the TPM could not attest' });
        },
      );
    },
  });
  // Local callers only (the socket is 0600); still never more than two activations at once. Its
  // proofs are host proofs: they verify nowhere but in a joining node's check of this host.
  addActivationService(server, rooted, new ActivationBudget({ perConnection: false }), { protocol: 'host' });
  await rm(socketPath, { force: true });
  // A node's directory in a deep workspace gives a path longer than a socket address holds.
  await withUnixSocketPath(
    socketPath,
    (path) =>
      new Promise<void>((resolve, reject) => {
        server.bindAsync(`unix:${path}`, grpc.ServerCredentials.createInsecure(), (err) => {
          if (err) reject(err);
          else resolve();
        });
      }),
  );
  await chmod(socketPath, 0o600);
  logger.info('attestation agent listening', { socket: socketPath });
  return {
    close: async () => {
      await new Promise<void>((resolve) => {
        server.tryShutdown(() => {
          resolve();
        });
      });
      await rm(socketPath, { force: true });
    },
  };
}
