import { X509Certificate } from 'node:crypto';
import type { Credential, MeasuredEvent } from '@constellation/proto';
import {
  DEFAULT_AK_ALGORITHM,
  PCR_COUNT,
  akTemplate,
  parseQuoteInfo,
  pcrCompositeDigest,
  readEndorsementKeys,
} from '@constellation/tpm';
import type { EndorsementKeys, KeyAlgorithm, Tpm } from '@constellation/tpm';
import { quoteExtraData } from './binding.js';
import { encodeDocument } from './document.js';
import { AttestationConfigError } from './errors.js';
import type { Issuer, RootedIdentity } from './issuer.js';
import { ekPublicKeyHash } from './ek-public.js';
import { variantByName } from './variant.js';
import type { Variant } from './variant.js';

export interface TpmIssuerOptions {
  /** Attestation key type; the AK is a primary key in the endorsement hierarchy, so it is stable per TPM. */
  akAlgorithm?: KeyAlgorithm;
  /** PCRs to quote (SHA-256 bank); all 24 by default. */
  pcrs?: readonly number[];
  /** The older list of measured events to include, read at issue time (tcgEventLog supersedes it). */
  eventLog?: () => readonly MeasuredEvent[];
  /**
   * The node's TCG event log (crypto-agile, the boot log with the bootstrapper's own events
   * appended), read at issue time; undefined or empty: none. At most MAX_EVENT_LOG_BYTES.
   */
  tcgEventLog?: () => Uint8Array | undefined;
}

export interface RootedTpmIssuerOptions extends TpmIssuerOptions {
  /** Intermediate CA certificates (DER) sent with the EK certificate, the EK's issuer first. */
  ekIntermediates?: readonly Uint8Array[];
  /** The TPM's endorsement keys when the caller started reading them already (readEndorsementKeys). */
  endorsementKeys?: Promise<EndorsementKeys>;
}

const ALL_PCRS = [...Array(PCR_COUNT).keys()];
const MAX_ATTEMPTS = 3;

/**
 * Issues TPM quote documents: one SHA-256 quote over the chosen PCRs. `TpmIssuer.rooted()` makes
 * a `tpm2-ek` issuer that also carries the TPM's EK certificate and answers credentials;
 * `new TpmIssuer()` makes the unrooted `qemu-vtpm` issuer kept for compatibility.
 */
export class TpmIssuer implements Issuer {
  readonly variant: Variant;
  readonly rooted?: RootedIdentity;
  private readonly tpm: Tpm;
  private readonly akAlgorithm: KeyAlgorithm;
  private readonly pcrs: number[];
  private readonly eventLog: () => readonly MeasuredEvent[];
  private readonly tcgEventLog: () => Uint8Array | undefined;

  constructor(tpm: Tpm, options: TpmIssuerOptions = {}, rooted?: RootedIdentity) {
    this.tpm = tpm;
    this.akAlgorithm = options.akAlgorithm ?? DEFAULT_AK_ALGORITHM;
    this.pcrs = [...new Set(options.pcrs ?? ALL_PCRS)].sort((a, b) => a - b);
    this.eventLog = options.eventLog ?? (() => []);
    this.tcgEventLog = options.tcgEventLog ?? (() => undefined);
    this.variant = variantByName(rooted === undefined ? 'qemu-vtpm' : 'tpm2-ek');
    if (rooted !== undefined) this.rooted = rooted;
  }

  /**
   * A `tpm2-ek` issuer: reads the RSA EK certificate from NV, regenerates the EK and the AK once,
   * and activates credentials with both. Fails with a clear message on a TPM without an EK
   * certificate, since such a TPM cannot prove which machine it is.
   */
  static async rooted(tpm: Tpm, options: RootedTpmIssuerOptions = {}): Promise<TpmIssuer> {
    const akAlgorithm = options.akAlgorithm ?? DEFAULT_AK_ALGORITHM;
    const keys = await (options.endorsementKeys ?? readEndorsementKeys(tpm, akAlgorithm));
    const { ekCertificate: certificate, ekPublic: ek, akPublic, akName } = keys;
    if (keys.akAlgorithm !== akAlgorithm)
      throw new AttestationConfigError(
        `the endorsement keys read ahead hold an ${keys.akAlgorithm.toUpperCase()} AK, but this issuer attests with an ${akAlgorithm.toUpperCase()} one`,
      );
    if (certificate === undefined) {
      throw new AttestationConfigError(
        `${tpm.transport.description} has no RSA EK certificate (NV index 0x01c00002): the "tpm2-ek" variant needs a TPM manufactured with an endorsement certificate (swtpm_setup --create-ek-cert); the unrooted "qemu-vtpm" variant works without one but proves no identity`,
      );
    }
    const ak = akTemplate(akAlgorithm);
    const identity: RootedIdentity = {
      identity: {
        ekPublic: ek,
        ekCertificate: certificate,
        ekIntermediates: (options.ekIntermediates ?? []).map((der) => Buffer.from(der)),
      },
      akPublic,
      akName,
      ekPublicKeyHash: certificateKeyHash(certificate),
      activate: (credential: Credential) =>
        tpm.activateCredentialWithKeys(
          ak,
          'rsa',
          Buffer.from(credential.credentialBlob),
          Buffer.from(credential.encryptedSecret),
        ),
    };
    return new TpmIssuer(tpm, options, identity);
  }

  issue(userData: Uint8Array, nonce: Uint8Array): Promise<Buffer> {
    const extraData = quoteExtraData(userData, nonce);
    return this.tpm.withPrimaryKey('endorsement', akTemplate(this.akAlgorithm), async (ak) => {
      // A PCR extended between quoting and reading would make the document inconsistent; the
      // quote's own digest tells us, and we quote again.
      for (let attempt = 1; ; attempt++) {
        const quote = await this.tpm.quote(ak.handle, extraData, [{ hash: 'sha256', pcrs: this.pcrs }]);
        const values = await this.tpm.pcrRead('sha256', this.pcrs);
        if (
          pcrCompositeDigest(values, this.pcrs).equals(parseQuoteInfo(quote.attest).pcrDigest) ||
          attempt >= MAX_ATTEMPTS
        ) {
          return encodeDocument({
            variant: this.variant.name,
            akPublic: ak.publicBytes,
            quotes: [
              {
                attest: quote.attest,
                signature: quote.signature,
                pcrs: this.pcrs.map((index) => ({ index, value: values.get(index) ?? Buffer.alloc(0) })),
              },
            ],
            userData: Buffer.from(userData),
            eventLog: [...this.eventLog()],
            tcgEventLog: Buffer.from(this.tcgEventLog() ?? []),
            ...(this.rooted === undefined ? {} : { identity: this.rooted.identity }),
          });
        }
      }
    });
  }
}

/** SHA-256 of the certificate's SubjectPublicKeyInfo, hex: the machine's EK hash. */
export function certificateKeyHash(certificate: Uint8Array): string {
  const spki = new X509Certificate(certificate).publicKey.export({ type: 'spki', format: 'der' });
  return ekPublicKeyHash(spki);
}
