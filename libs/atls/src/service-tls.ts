import { generateKeyPairSync } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { issueFromPublicRoot } from './public-root.js';

/*
 * TLS for challenge services (the JoinService). Their TLS carries no attestation: the node's
 * secrets come back sealed to a key only the node holds, the node's attestation binds that key and
 * its request, and a node that wants the service's host proven asks for it inside the protocol.
 * TLS here only keeps metadata (CSR, disk UUID) from passive observers. Server certificates chain
 * to the public aTLS root, so clients that do check chains (grpcurl with the root, say) pass; ours
 * does not (see serviceChannelCredentials).
 */

/** A fresh P-256 key and a certificate for it from the public aTLS root, both PEM. */
export function serviceTlsIdentity(): { key: string; cert: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    cert: issueFromPublicRoot(publicKey, 'constellation service'),
  };
}

/** Server credentials with a fresh key and a certificate from the public aTLS root. */
export function serviceServerCredentials(): grpc.ServerCredentials {
  const { key, cert } = serviceTlsIdentity();
  return grpc.ServerCredentials.createSsl(null, [{ private_key: Buffer.from(key), cert_chain: Buffer.from(cert) }]);
}

let channelCredentials: grpc.ChannelCredentials | undefined;

/**
 * Channel credentials for a challenge service: TLS for confidentiality only. The service proves
 * itself inside the protocol (its host's attestation, when the node asks for it), never with its
 * certificate: one chained to the public root proves nothing, since anyone holds that root's key.
 * So the client trusts no root (an empty CA list) and accepts the unverified chain. A chain check
 * that succeeded only made Node (for checkServerIdentity) and grpc-js (for its auth context) each
 * decode the peer certificate: 1.4 ms of a node's side of a join, measured in a join storm.
 * One instance per process: each builds an OpenSSL context, and they hold no state.
 */
export function serviceChannelCredentials(): grpc.ChannelCredentials {
  channelCredentials ??= grpc.credentials.createFromSecureContext(createSecureContext({ ca: [] }), {
    rejectUnauthorized: false,
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
