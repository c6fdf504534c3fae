import type { Credential, TpmIdentity } from '@constellation/proto';
import type { Variant } from './variant.js';

/** The identity side of a rooted issuer: what it announces, and its TPM's answer to a credential. */
export interface RootedIdentity {
  /** EK public area and certificate chain, as sent in hellos and documents. */
  readonly identity: TpmIdentity;
  /** The attestation key's public area (marshalled TPMT_PUBLIC). */
  readonly akPublic: Buffer;
  /** TPM name of the attestation key. */
  readonly akName: Buffer;
  /** Lower-case hex SHA-256 of the EK certificate's SubjectPublicKeyInfo: what registries and disk keys use. */
  readonly ekPublicKeyHash: string;
  /** TPM2_ActivateCredential with this TPM's AK and EK: the credential's secret, or a TpmError. */
  activate(credential: Credential): Promise<Buffer>;
}

/** Produces attestation documents: evidence about this machine bound to user data and a nonce. */
export interface Issuer {
  readonly variant: Variant;
  /** A serialized attestation document whose quotes bind SHA-256(userData || nonce). */
  issue(userData: Uint8Array, nonce: Uint8Array): Promise<Buffer>;
  /** Present exactly when `variant.rooted`: the TPM identity and credential activation. */
  readonly rooted?: RootedIdentity;
}
