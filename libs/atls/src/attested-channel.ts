import { randomBytes } from 'node:crypto';
import type { PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { AttestationError } from '@constellation/attestation';
import type { ValidationResult, Validator } from '@constellation/attestation';
import { readCertificateFields } from './certificate.js';
import { AtlsError } from './errors.js';
import { NONCE_BYTES, nonceToServerName } from './nonce-server-name.js';
import { atlsPublicRoot } from './public-root.js';
import { spkiUserData } from './spki-binding.js';
import { errorMessage } from '@constellation/errors';

/**
 * Credentials for one attested connection to an attested-TLS endpoint. Each instance carries
 * one fresh nonce and accepts exactly one TLS handshake: a reconnect would present the same
 * nonce, so it is refused and the caller makes new credentials (and a new channel) instead.
 */
export class AttestedChannelCredentials {
  readonly nonce: Buffer;
  readonly credentials: grpc.ChannelCredentials;
  /** Channel options that put the nonce into SNI; pass them when creating the client. */
  readonly channelOptions: grpc.ChannelOptions;
  private verified: ValidationResult | undefined;
  private failed: Error | undefined;
  private handshakes = 0;

  constructor(validators: readonly Validator[]) {
    if (validators.length === 0) throw new RangeError('aTLS client needs at least one validator');
    this.nonce = randomBytes(NONCE_BYTES);
    this.channelOptions = {
      'grpc.ssl_target_name_override': nonceToServerName(this.nonce),
      // grpc-js shares connections between channels with equal options; an attested connection
      // belongs to the channel that asked for it, so every channel gets its own pool.
      'grpc.use_local_subchannel_pool': 1,
    };
    this.credentials = grpc.credentials.createSsl(Buffer.from(atlsPublicRoot().certificatePem), null, null, {
      checkServerIdentity: (_host: string, cert: PeerCertificate) => this.check(validators, cert),
    });
  }

  /** The validation result of the handshake, once it succeeded. */
  get result(): ValidationResult | undefined {
    return this.verified;
  }

  /** Why the handshake was refused, if it was. */
  get failure(): Error | undefined {
    return this.failed;
  }

  /** Number of TLS handshakes these credentials saw (verification runs once per connection). */
  get handshakeCount(): number {
    return this.handshakes;
  }

  private check(validators: readonly Validator[], cert: PeerCertificate): Error | undefined {
    this.handshakes++;
    if (this.handshakes > 1) {
      return this.fail(
        new AtlsError('aTLS nonce already used: a new connection needs new credentials and a new channel'),
      );
    }
    try {
      const fields = readCertificateFields(cert.raw);
      const expectedUserData = spkiUserData(fields.spki);
      for (const validator of validators) {
        const extension = fields.extensions.find((ext) => ext.oid === validator.variant.oid);
        if (extension === undefined) continue;
        this.verified = validator.validate(extension.value, this.nonce, expectedUserData);
        return undefined;
      }
      const accepted = validators.map((v) => `${v.variant.name} (${v.variant.oid})`).join(', ');
      return this.fail(new AtlsError(`server certificate carries no attestation for an accepted variant: ${accepted}`));
    } catch (err) {
      if (err instanceof AttestationError) return this.fail(err);
      return this.fail(new AtlsError(`server certificate is malformed: ${errorMessage(err)}`, { cause: err }));
    }
  }

  private fail(err: Error): Error {
    this.failed ??= err;
    return err;
  }
}

/**
 * Turns an RPC error into the attestation failure behind it, when there was one: grpc-js reports
 * a refused handshake as UNAVAILABLE, which would hide why the server was not trusted.
 */
export function attestationFailure(err: unknown, credentials: AttestedChannelCredentials): unknown {
  return credentials.failure ?? err;
}
