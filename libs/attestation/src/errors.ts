/** Why an attestation was rejected. Stable strings: metrics and logs group by them. */
export type AttestationFailureReason =
  | 'malformed'
  | 'variant'
  | 'attestation-key'
  | 'weak-hash'
  | 'signature'
  | 'nonce'
  | 'pcr-selection'
  | 'pcr-digest'
  /** The TCG event log is malformed, too large, or does not replay to a quoted PCR. */
  | 'event-log'
  /** The event log breaks a rule of the event policy (Secure Boot, kernel command line, digests). */
  | 'event-policy'
  | 'measurements'
  | 'user-data'
  /** The EK certificate chain does not validate to a pinned root (other CA, expired, malformed). */
  | 'ek-certificate'
  /** The EK public area is not the TCG default EK, or differs from the certificate's key. */
  | 'ek-public'
  /** Credential activation failed: the AK does not live in the TPM that holds the certified EK. */
  | 'activation'
  /** The activation proof is valid, but for another protocol (an aTLS server's for a join, say). */
  | 'activation-protocol'
  /** The attested identity (AK or EK) differs from the one announced earlier in the exchange. */
  | 'identity';

/** One PCR whose quoted value differs from the expected measurement. */
export interface PcrMismatch {
  pcr: number;
  expected: string;
  actual: string;
  warnOnly: boolean;
  /**
   * The events that extended this PCR, when the node's event log replays to `actual`: from its
   * TCG event log ("event 2 EV_IPL \"bootstrapper bundle\""), or from the older list of measured events.
   */
  measuredEvents?: { description: string; digest: string }[];
}

/** An attestation document was rejected. The message says exactly why. */
export class AttestationError extends Error {
  override readonly name = 'AttestationError';
  readonly reason: AttestationFailureReason;
  /** For reason "measurements": every enforced PCR that differs, in index order. */
  readonly mismatches: readonly PcrMismatch[];

  constructor(reason: AttestationFailureReason, message: string, mismatches: readonly PcrMismatch[] = []) {
    super(message);
    this.reason = reason;
    this.mismatches = mismatches;
  }
}

/** Attestation configuration (variant name, measurements file) is invalid. */
export class AttestationConfigError extends Error {
  override readonly name = 'AttestationConfigError';
}
