import type { TpmIdentity } from '@constellation/proto';
import type { Variant } from './variant.js';
import type { PcrMismatch } from './errors.js';
import type { EventLog } from '@constellation/eventlog';

/** What a successful validation established. */
export interface ValidationResult {
  variant: Variant;
  /** The attested user data (the caller checks it binds what it expects, e.g. a TLS key). */
  userData: Buffer;
  /** Quoted SHA-256 PCR values by index. */
  pcrs: ReadonlyMap<number, Buffer>;
  /**
   * The node's TCG event log (its firmware's and the bootstrapper's events), when it sent one:
   * its replay equals every quoted PCR it extends. Event data stays untrusted (docs/eventlog.md).
   */
  eventLog?: EventLog;
  /** With `eventLog`: the PCRs it extends that the quote does not cover (their events are unverified). */
  eventLogUnquoted?: readonly number[];
  /** Mismatches on warnOnly PCRs: accepted, but worth logging. */
  warnings: readonly PcrMismatch[];
  /** TPM name of the attestation key that signed (nameAlg || SHA-256(TPMT_PUBLIC)), hex. */
  attestationKeyName: string;
  /** The attestation key's public area (marshalled TPMT_PUBLIC) as the document carried it. */
  akPublic: Buffer;
  /**
   * Rooted variants: the TPM identity the document claims. Not yet proven: the caller proves it
   * with EkIdentityVerifier and credential activation before trusting the peer.
   */
  identityClaim?: TpmIdentity;
}

/** Checks attestation documents of one variant against the current measurements. */
export interface Validator {
  readonly variant: Variant;
  /**
   * Validates `document` for `nonce`. Throws AttestationError naming the reason; when
   * `expectedUserData` is given, the document must carry exactly that user data. Synchronous on
   * purpose: TLS certificate checks (`checkServerIdentity`) cannot wait for a promise, and
   * validation needs no I/O (variants that need remote data cache it beforehand).
   */
  validate(document: Uint8Array, nonce: Uint8Array, expectedUserData?: Uint8Array): ValidationResult;
}
