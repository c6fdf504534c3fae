import { generateKeyPairSync, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { Credential, TpmIdentity } from '@constellation/proto';
import {
  TPM_ALG,
  TPM_ECC,
  TPM_GENERATED_VALUE,
  TPM_ST,
  TpmWriter,
  marshalPublic,
  marshalSignature,
  pcrCompositeDigest,
  publicName,
  writePcrSelections,
} from '@constellation/tpm';
import type { EccPublic } from '@constellation/tpm';
import { AK_ATTRIBUTES } from '@constellation/tpm';
import { quoteExtraData } from '../binding.js';
import { encodeDocument } from '../document.js';
import { certificateKeyHash } from '../tpm-issuer.js';
import type { Issuer, RootedIdentity } from '../issuer.js';
import type { Measurements } from '../measurements.js';
import { variantByName } from '../variant.js';
import type { Variant } from '../variant.js';

export interface SoftwareAttesterOptions {
  /** The PCR values to claim: whatever the attacker read from the cluster's public measurements. */
  claims: Measurements;
  /**
   * Pose as a rooted machine with a TPM identity copied from a genuine one (EK certificates are
   * public). Its credentials cannot be activated: it has no TPM.
   */
  stolenIdentity?: TpmIdentity | undefined;
}

/**
 * Attacker 1 of the threat model, as code: no TPM, only an ECDSA key in memory. It builds
 * TPMS_ATTEST quotes itself, with the magic and type a TPM would use and the PCR values the
 * cluster expects, and signs them with its own "attestation key" that claims every TPM
 * attribute. For tests of the refusals only; nothing in the product imports it.
 */
export class SoftwareAttester implements Issuer {
  readonly variant: Variant;
  readonly rooted?: RootedIdentity;
  private readonly key: KeyObject;
  private readonly akPublic: Buffer;
  private readonly akName: Buffer;
  private readonly claims: Measurements;

  constructor(options: SoftwareAttesterOptions) {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    const ak: EccPublic = {
      type: 'ecc',
      nameAlg: TPM_ALG.SHA256,
      objectAttributes: AK_ATTRIBUTES,
      authPolicy: Buffer.alloc(0),
      symmetric: { algorithm: TPM_ALG.NULL, keyBits: 0, mode: TPM_ALG.NULL },
      scheme: { scheme: TPM_ALG.ECDSA, hash: TPM_ALG.SHA256 },
      curve: TPM_ECC.NIST_P256,
      kdf: { scheme: TPM_ALG.NULL, hash: TPM_ALG.NULL },
      x: Buffer.from(jwk.x ?? '', 'base64url'),
      y: Buffer.from(jwk.y ?? '', 'base64url'),
    };
    this.key = privateKey;
    this.akPublic = marshalPublic(ak);
    this.akName = publicName(ak);
    this.claims = options.claims;
    const stolen = options.stolenIdentity;
    this.variant = variantByName(stolen === undefined ? 'qemu-vtpm' : 'tpm2-ek');
    if (stolen !== undefined) {
      this.rooted = {
        identity: stolen,
        akPublic: this.akPublic,
        akName: this.akName,
        ekPublicKeyHash: certificateKeyHash(stolen.ekCertificate),
        // Without the EK's private key the credential cannot be opened; the best it can do is guess.
        activate: (_credential: Credential) => Promise.resolve(Buffer.alloc(32, 0x41)),
      };
    }
  }

  issue(userData: Uint8Array, nonce: Uint8Array): Promise<Buffer> {
    const pcrs = [...this.claims.keys()].sort((a, b) => a - b);
    const values = new Map(pcrs.map((pcr) => [pcr, this.claims.get(pcr)?.expected ?? Buffer.alloc(32)]));
    const attest = new TpmWriter().u32(TPM_GENERATED_VALUE).u16(TPM_ST.ATTEST_QUOTE).sized(this.akName);
    attest.sized(quoteExtraData(userData, nonce)).u64(1000n).u32(0).u32(0).u8(1).u64(0n);
    writePcrSelections(attest, [{ hash: 'sha256', pcrs }]);
    attest.sized(pcrCompositeDigest(values, pcrs));
    const message = attest.toBuffer();
    const raw = sign('sha256', message, { key: this.key, dsaEncoding: 'ieee-p1363' });
    const signature = marshalSignature({
      algorithm: 'ecdsa',
      hash: 'sha256',
      r: raw.subarray(0, 32),
      s: raw.subarray(32),
    });
    return Promise.resolve(
      encodeDocument({
        variant: this.variant.name,
        akPublic: this.akPublic,
        quotes: [
          {
            attest: message,
            signature,
            pcrs: pcrs.map((index) => ({ index, value: values.get(index) ?? Buffer.alloc(32) })),
          },
        ],
        userData: Buffer.from(userData),
        eventLog: [],
        tcgEventLog: Buffer.alloc(0),
        ...(this.rooted === undefined ? {} : { identity: this.rooted.identity }),
      }),
    );
  }
}
