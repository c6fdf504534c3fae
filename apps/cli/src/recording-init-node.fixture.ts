import * as grpc from '@grpc/grpc-js';
import { AttestedTlsServer } from '@constellation/atls';
import type { Issuer } from '@constellation/attestation';
import { HealthStatus, InitServiceService } from '@constellation/proto';
import type { InitRequest, InitResponse } from '@constellation/proto';

/** A node that attests with `issuer` over aTLS and records every init request it gets. */
export interface RecordingInitNode {
  port: number;
  /** What reached it: the secrets an attacker would keep. */
  received: InitRequest[];
  close(): Promise<void>;
}

/**
 * An attacker's InitServer: it attests with `issuer` (a software attester, or a genuine TPM that
 * booted other software), records each request and answers with `answer` (by default nothing:
 * the call ends without a result).
 */
export async function recordingInitNode(issuer: Issuer, answer: InitResponse[] = []): Promise<RecordingInitNode> {
  const received: InitRequest[] = [];
  const server = new grpc.Server();
  server.addService(InitServiceService, {
    init: (call: grpc.ServerWritableStream<InitRequest, InitResponse>) => {
      received.push(call.request);
      for (const message of answer) call.write(message);
      call.end();
    },
  });
  new HealthStatus({ '': 'SERVING' }).addTo(server);
  const atls = new AttestedTlsServer(server, { issuer });
  const port = await atls.listen(0, '127.0.0.1');
  return {
    port,
    received,
    close: async () => {
      await atls.close(100);
      server.forceShutdown();
    },
  };
}
