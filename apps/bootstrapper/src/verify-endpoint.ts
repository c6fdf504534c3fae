import { AttestedTlsServer } from '@constellation/atls';
import type { Issuer } from '@constellation/attestation';
import type { Logger } from '@constellation/logger';
import { HealthStatus, createGrpcServer } from '@constellation/proto';

/**
 * After bootstrapping, the node keeps one server-attested TLS endpoint open so that
 * `constellation verify` can attest it on demand: every connection gets a fresh quote over the
 * client's nonce. It serves the health service and, with a rooted issuer, the ActivationService:
 * `verify` proves the node's AK lives beside its certified EK before it reports the node. Its
 * proofs carry the aTLS server label and the connection's own nonce, so no other protocol (a join
 * challenge) accepts them (issue 42).
 */
export async function serveVerifyEndpoint(
  issuer: Issuer,
  host: string,
  port: number,
  logger: Logger,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = createGrpcServer();
  new HealthStatus({ '': 'SERVING' }).addTo(server);
  const atls = new AttestedTlsServer(server, { issuer, logger });
  const bound = await atls.listen(port, host);
  logger.info('verify endpoint listening', { port: bound });
  return {
    port: bound,
    close: async () => {
      await atls.close();
      server.forceShutdown();
    },
  };
}
