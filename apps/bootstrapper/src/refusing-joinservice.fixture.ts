import * as grpc from '@grpc/grpc-js';
import { serviceServerCredentials } from '@constellation/atls';
import { DummyIssuer } from '@constellation/attestation/testing';
import { JoinServiceService } from '@constellation/proto';
import { MetadataServer } from '@constellation/instance-metadata';
import { JoinServiceConnection } from './join-service-client.js';
import { MetadataClient } from './metadata-client.js';
import type { NodeContext } from './node-context.js';

/** How the fake service refuses one call: status, message and its retry-after-ms trailer. */
export interface FakeRefusal {
  code: grpc.status;
  details: string;
  retryAfterMs: string;
}

export interface RefusingJoinService {
  /** A node's JoinService client, pointed at the fake service through instance metadata. */
  connection: JoinServiceConnection;
  close(): Promise<void>;
}

/**
 * A JoinService (real gRPC, service TLS) that refuses every join and rejoin as `refuse` says, and
 * the node's client of it. The client uses the node's metadata and issuer only.
 */
export async function startRefusingJoinService(
  refuse: (call: grpc.ServerDuplexStream<unknown, unknown>) => FakeRefusal,
): Promise<RefusingJoinService> {
  const server = new grpc.Server();
  const answer = (call: grpc.ServerDuplexStream<unknown, unknown>): void => {
    const { code, details, retryAfterMs } = refuse(call);
    const metadata = new grpc.Metadata();
    metadata.set('retry-after-ms', retryAfterMs);
    call.emit('error', { code, details, metadata });
  };
  server.addService(JoinServiceService, { issueJoinTicket: answer, issueRejoinTicket: answer });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', serviceServerCredentials(), (err, bound) => {
      if (err) reject(err);
      else resolve(bound);
    });
  });
  const metadata = await MetadataServer.start({
    instances: [{ name: 'worker-1', role: 'worker', ip: '127.0.0.2' }],
    endpoint: { host: '127.0.0.1', apiServerPort: 1, joinServicePort: port, initPort: 0 },
    initSecretHash: 'x',
  });
  const context = { metadata: new MetadataClient(metadata.url, 'worker-1'), issuer: new DummyIssuer() };
  return {
    connection: new JoinServiceConnection(context as unknown as NodeContext, 10_000),
    close: async () => {
      server.forceShutdown();
      await metadata.close();
    },
  };
}
