import type { MeasuredEvent } from '@constellation/proto';
import { PCR_COUNT, akTemplate, parseQuoteInfo, pcrCompositeDigest } from '@constellation/tpm';
import type { KeyAlgorithm, Tpm } from '@constellation/tpm';
import { quoteExtraData } from './binding.js';
import { encodeDocument } from './document.js';
import type { Issuer } from './issuer.js';
import { variantByName } from './variant.js';
import type { Variant } from './variant.js';

export interface TpmIssuerOptions {
  /** Attestation key type; the AK is a primary key in the endorsement hierarchy, so it is stable per TPM. */
  akAlgorithm?: KeyAlgorithm;
  /** PCRs to quote (SHA-256 bank); all 24 by default. */
  pcrs?: readonly number[];
  /** The boot event log to include, read at issue time. */
  eventLog?: () => readonly MeasuredEvent[];
}

const ALL_PCRS = [...Array(PCR_COUNT).keys()];
const MAX_ATTEMPTS = 3;

/** Issues `qemu-vtpm` documents from a TPM: one SHA-256 quote over the chosen PCRs. */
export class TpmIssuer implements Issuer {
  readonly variant: Variant = variantByName('qemu-vtpm');
  private readonly tpm: Tpm;
  private readonly akAlgorithm: KeyAlgorithm;
  private readonly pcrs: number[];
  private readonly eventLog: () => readonly MeasuredEvent[];

  constructor(tpm: Tpm, options: TpmIssuerOptions = {}) {
    this.tpm = tpm;
    this.akAlgorithm = options.akAlgorithm ?? 'ecc';
    this.pcrs = [...new Set(options.pcrs ?? ALL_PCRS)].sort((a, b) => a - b);
    this.eventLog = options.eventLog ?? (() => []);
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
          });
        }
      }
    });
  }
}
