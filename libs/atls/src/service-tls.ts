import { generateKeyPairSync } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { atlsPublicRoot, issueFromPublicRoot } from './public-root.js';

/*
 * TLS for challenge services (the JoinService). The service does not attest and the node
 * does not need to know it: the node's secrets come back sealed to a key only the node holds, and
 * the node's attestation binds that key and its request. TLS here only keeps metadata (CSR, disk
 * UUID) off the wire. Certificates chain to the public aTLS root so ordinary chain checks pass.
 */

/** Server credentials with a fresh key and a certificate from the public aTLS root. */
export function serviceServerCredentials(): grpc.ServerCredentials {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return grpc.ServerCredentials.createSsl(null, [
    {
      private_key: Buffer.from(privateKey.export({ type: 'pkcs8', format: 'pem' })),
      cert_chain: Buffer.from(issueFromPublicRoot(publicKey, 'constellation service')),
    },
  ]);
}

let channelCredentials: grpc.ChannelCredentials | undefined;

/**
 * Channel credentials for a challenge service: TLS to the public root, no server identity check.
 * One instance per process: each builds an OpenSSL context with the root in it, which cost more
 * than the rest of a node's side of a join (measured in a join storm), and they hold no state.
 */
export function serviceChannelCredentials(): grpc.ChannelCredentials {
  channelCredentials ??= grpc.credentials.createSsl(Buffer.from(atlsPublicRoot().certificatePem), null, null, {
    checkServerIdentity: () => undefined,
  });
  return channelCredentials;
}

/**
 * Channel options for challenge services: a fixed TLS server name, because nodes dial the
 * service by IP address and an IP is not a valid SNI name (RFC 6066).
 */
export const SERVICE_CHANNEL_OPTIONS = {
  'grpc.ssl_target_name_override': 'joinservice.constellation.internal',
} as const;
