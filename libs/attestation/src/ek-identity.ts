import { randomBytes } from 'node:crypto';
import type { Credential, TpmIdentity } from '@constellation/proto';
import { parsePublic, publicName } from '@constellation/tpm';
import type { TpmPublic } from '@constellation/tpm';
import { checkActivationProof } from './activation-proof.js';
import type { ActivationProtocol } from './activation-proof.js';
import { checkAttestationKey } from './attestation-key.js';
import { verifyEkCertificate } from './ek-certificate.js';
import { checkEkPublic, ekPublicKeyHash } from './ek-public.js';
import { AttestationError } from './errors.js';
import { makeCredential } from './make-credential.js';
import { errorMessage } from '@constellation/errors';

/** What a verifier knows about a TPM once its EK certificate validated and its AK was activated. */
export interface VerifiedTpmIdentity {
  /** Lower-case hex SHA-256 of the EK's DER SubjectPublicKeyInfo: the key of the instance registry. */
  ekPublicKeyHash: string;
  /** TPM name of the attestation key, hex. */
  akName: string;
  /** Subjects from the EK certificate up to the pinned root. */
  certificatePath: readonly string[];
}

/**
 * A credential waiting for its proof: send `credential` to the TPM, then `prove` the answer.
 * `identity` may be trusted only after `prove` returned.
 */
export interface PendingActivation {
  readonly credential: Credential;
  /**
   * Throws AttestationError("activation") unless `proof` shows the TPM recovered the secret, for
   * this `protocol` and `nonce` (a proof made for another protocol is refused, naming it).
   */
  prove(proof: Uint8Array, nonce: Uint8Array, protocol: ActivationProtocol): VerifiedTpmIdentity;
  /** The AK name the credential was made for; a document must be signed by exactly this key. */
  readonly akName: Buffer;
  /** The EK's hash (as in VerifiedTpmIdentity) from its verified certificate: which TPM this is, before it proved it. */
  readonly ekPublicKeyHash: string;
}

export interface EkIdentityPolicy {
  /** Pinned EK CA roots, DER. Never empty. */
  roots: readonly Uint8Array[];
  /** Intermediates the verifier already knows (DER), used next to those the node sends. */
  intermediates?: readonly Uint8Array[];
  /** Clock for certificate validity; the system clock by default. */
  now?: () => Date;
}

const MAX_SENT_INTERMEDIATES = 4;

/**
 * The first question of attestation: who is this machine. Validates the EK certificate path to a
 * pinned root, checks that the EK public area is the TCG default EK with the certificate's key,
 * checks the AK's shape, and makes a fresh credential for that AK under that EK. Only a TPM that
 * holds both keys can activate it (TPM2_ActivateCredential checks the AK name inside the
 * credential), so a valid proof ties the AK, and every quote it signs, to the certified TPM.
 */
export class EkIdentityVerifier {
  private readonly policy: EkIdentityPolicy;

  constructor(policy: EkIdentityPolicy) {
    if (policy.roots.length === 0)
      throw new RangeError('EK identity verification needs at least one pinned root certificate');
    this.policy = policy;
  }

  async challenge(identity: TpmIdentity | undefined, akPublic: Uint8Array): Promise<PendingActivation> {
    if (identity === undefined || identity.ekCertificate.length === 0)
      throw new AttestationError('ek-certificate', 'the node sent no EK certificate');
    if (identity.ekIntermediates.length > MAX_SENT_INTERMEDIATES) {
      throw new AttestationError(
        'ek-certificate',
        `the node sent ${identity.ekIntermediates.length} intermediate certificates, at most ${MAX_SENT_INTERMEDIATES} are accepted`,
      );
    }
    let ek: TpmPublic;
    try {
      ek = parsePublic(identity.ekPublic);
    } catch (err) {
      throw new AttestationError('ek-public', `EK public area is malformed: ${errorMessage(err)}`);
    }
    const certificate = await verifyEkCertificate({
      certificate: identity.ekCertificate,
      intermediates: [...identity.ekIntermediates, ...(this.policy.intermediates ?? [])],
      roots: this.policy.roots,
      now: (this.policy.now ?? (() => new Date()))(),
    });
    checkEkPublic(ek, certificate);
    const ak = checkAttestationKey(akPublic);
    const akName = publicName(ak);
    const secret = randomBytes(32);
    const credential = makeCredential(ek, akName, secret);
    const verified: VerifiedTpmIdentity = {
      ekPublicKeyHash: ekPublicKeyHash(certificate.spki),
      akName: akName.toString('hex'),
      certificatePath: certificate.path,
    };
    return {
      credential,
      akName,
      ekPublicKeyHash: verified.ekPublicKeyHash,
      prove: (proof, nonce, protocol) => {
        checkActivationProof(protocol, proof, secret, nonce, akName);
        return verified;
      },
    };
  }
}
