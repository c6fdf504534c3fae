import { TPM_ALG, TPM_CAP, TPM_CC, TPM_RH, TPM_SU } from './constants.js';
import { marshalCommand, parseResponse } from './command.js';
import type { CommandResponse, CommandSpec } from './command.js';
import { TpmError, TpmParseError } from './errors.js';
import { hashAlgorithm, hashAlgorithmId, isKnownHashAlgorithm } from './hash-algorithm.js';
import type { HashName } from './hash-algorithm.js';
import { TpmWriter } from './marshal.js';
import { readPcrSelections, writePcrSelections } from './pcr-selection.js';
import type { PcrSelection } from './pcr-selection.js';
import { marshalPublic, parsePublic, publicName } from './public-area.js';
import type { TpmPublic } from './public-area.js';
import { SerialQueue } from './transport.js';
import type { TpmTransport } from './transport.js';

export type Hierarchy = 'owner' | 'endorsement';

export interface LoadedKey {
  handle: number;
  public: TpmPublic;
  /** The marshalled TPMT_PUBLIC exactly as the TPM returned it. */
  publicBytes: Buffer;
  name: Buffer;
}

export interface Quote {
  /** Raw TPMS_ATTEST, the signed message. */
  attest: Buffer;
  /** Raw TPMT_SIGNATURE over the TPMS_ATTEST. */
  signature: Buffer;
}

export interface Digest {
  hash: HashName;
  digest: Buffer;
}

const HIERARCHY_HANDLE: Record<Hierarchy, number> = { owner: TPM_RH.OWNER, endorsement: TPM_RH.ENDORSEMENT };
const TPM_RC_INITIALIZE = 0x100;
const MAX_EVENT_BYTES = 1024;

/**
 * A TPM 2.0 reached through a transport. Each method is one TPM command, marshalled here.
 * Multi-command sequences that create transient objects go through `withKey`, which holds an
 * exclusive lock and always flushes, because swtpm has no resource manager and only three
 * object slots.
 */
export class Tpm {
  readonly transport: TpmTransport;
  private readonly sequences = new SerialQueue();

  constructor(transport: TpmTransport) {
    this.transport = transport;
  }

  async close(): Promise<void> {
    await this.transport.close();
  }

  /** TPM2_Startup. A TPM that is already started (TPM_RC_INITIALIZE) counts as success. */
  async startup(type: 'clear' | 'state' = 'clear'): Promise<void> {
    const parameters = new TpmWriter().u16(type === 'clear' ? TPM_SU.CLEAR : TPM_SU.STATE).toBuffer();
    try {
      await this.execute({ name: 'Startup', code: TPM_CC.Startup, parameters });
    } catch (err) {
      if (!(err instanceof TpmError && err.code === TPM_RC_INITIALIZE)) throw err;
    }
  }

  /** TPM2_GetRandom, repeated until `count` bytes have been produced. */
  async getRandom(count: number): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let total = 0;
    while (total < count) {
      const want = Math.min(32, count - total);
      const { parameters } = await this.execute({
        name: 'GetRandom',
        code: TPM_CC.GetRandom,
        parameters: new TpmWriter().u16(want).toBuffer(),
      });
      const bytes = parameters.sized('randomBytes');
      if (bytes.length === 0) throw new TpmParseError('TPM2_GetRandom returned no bytes');
      chunks.push(bytes);
      total += bytes.length;
    }
    return Buffer.concat(chunks).subarray(0, count);
  }

  /** The PCR banks with at least one allocated PCR (TPM2_GetCapability, TPM_CAP_PCRS). */
  async pcrBanks(): Promise<PcrSelection[]> {
    const parameters = new TpmWriter().u32(TPM_CAP.PCRS).u32(0).u32(1).toBuffer();
    const response = await this.execute({ name: 'GetCapability', code: TPM_CC.GetCapability, parameters });
    const r = response.parameters;
    r.u8('moreData');
    const capability = r.u32('capability');
    if (capability !== TPM_CAP.PCRS) throw new TpmParseError(`TPM2_GetCapability returned capability ${capability}`);
    return readPcrSelections(r, 'assignedPCR').filter((bank) => bank.pcrs.length > 0);
  }

  /** TPM2_PCR_Read of `pcrs` in one bank, repeated until all are read (TPMs return at most 8 per call). */
  async pcrRead(hash: HashName, pcrs: readonly number[]): Promise<Map<number, Buffer>> {
    const values = new Map<number, Buffer>();
    let remaining = [...new Set(pcrs)].sort((a, b) => a - b);
    while (remaining.length > 0) {
      const w = new TpmWriter();
      writePcrSelections(w, [{ hash, pcrs: remaining }]);
      const { parameters: r } = await this.execute({
        name: 'PCR_Read',
        code: TPM_CC.PCR_Read,
        parameters: w.toBuffer(),
      });
      r.u32('pcrUpdateCounter');
      const selected = readPcrSelections(r, 'pcrSelectionOut');
      const count = r.u32('pcrValues.count');
      const read = selected.flatMap((s) => (s.hash === hash ? s.pcrs : []));
      if (count !== read.length) throw new TpmParseError(`TPM2_PCR_Read: ${count} values for ${read.length} PCRs`);
      if (read.length === 0)
        throw new TpmParseError(`TPM2_PCR_Read: bank ${hash} returned none of PCRs ${remaining.join(',')}`);
      for (const pcr of read) values.set(pcr, r.sized(`pcrValues[${pcr}]`, 64));
      remaining = remaining.filter((pcr) => !values.has(pcr));
    }
    return values;
  }

  /** TPM2_PCR_Extend with precomputed digests (one per bank to extend). */
  async pcrExtend(pcr: number, digests: readonly Digest[]): Promise<void> {
    const w = new TpmWriter().u32(digests.length);
    for (const { hash, digest } of digests) {
      const id = hashAlgorithmId(hash);
      const { size } = hashAlgorithm(id);
      if (digest.length !== size) throw new RangeError(`${hash} digest must be ${size} bytes, got ${digest.length}`);
      w.u16(id).bytes(digest);
    }
    await this.execute({
      name: 'PCR_Extend',
      code: TPM_CC.PCR_Extend,
      handles: [pcr],
      authHandles: 1,
      parameters: w.toBuffer(),
    });
  }

  /** TPM2_PCR_Event: the TPM hashes `data` in every bank and extends `pcr`. Returns the digests. */
  async pcrEvent(pcr: number, data: Buffer): Promise<Digest[]> {
    if (data.length > MAX_EVENT_BYTES)
      throw new RangeError(`event data of ${data.length} bytes exceeds ${MAX_EVENT_BYTES}`);
    const parameters = new TpmWriter().sized(data).toBuffer();
    const { parameters: r } = await this.execute({
      name: 'PCR_Event',
      code: TPM_CC.PCR_Event,
      handles: [pcr],
      authHandles: 1,
      parameters,
    });
    const count = r.u32('digests.count');
    const digests: Digest[] = [];
    for (let i = 0; i < count; i++) {
      const alg = r.u16(`digests[${i}].hashAlg`);
      if (!isKnownHashAlgorithm(alg)) throw new TpmParseError(`TPM2_PCR_Event: unknown bank 0x${alg.toString(16)}`);
      const { name, size } = hashAlgorithm(alg);
      digests.push({ hash: name, digest: r.bytes(size, `digests[${i}]`) });
    }
    return digests;
  }

  /** TPM2_CreatePrimary from `template` in `hierarchy`. The caller must flush the handle. */
  async createPrimary(hierarchy: Hierarchy, template: TpmPublic): Promise<LoadedKey> {
    const templateBytes = marshalPublic(template);
    const w = new TpmWriter()
      .u16(4) // TPM2B_SENSITIVE_CREATE: empty userAuth and data
      .u16(0)
      .u16(0)
      .sized(templateBytes)
      .sized(Buffer.alloc(0)); // outsideInfo
    writePcrSelections(w, []); // creationPCR
    const { handles, parameters: r } = await this.execute({
      name: 'CreatePrimary',
      code: TPM_CC.CreatePrimary,
      handles: [HIERARCHY_HANDLE[hierarchy]],
      authHandles: 1,
      parameters: w.toBuffer(),
      responseHandles: 1,
    });
    const handle = handles[0] ?? 0;
    const publicBytes = r.sized('outPublic');
    const pub = parsePublic(publicBytes);
    return { handle, public: pub, publicBytes, name: publicName(pub) };
  }

  /** TPM2_ReadPublic of a loaded or persistent object. */
  async readPublic(handle: number): Promise<LoadedKey> {
    const { parameters: r } = await this.execute({ name: 'ReadPublic', code: TPM_CC.ReadPublic, handles: [handle] });
    const publicBytes = r.sized('outPublic');
    const name = r.sized('name');
    r.sized('qualifiedName');
    return { handle, public: parsePublic(publicBytes), publicBytes, name };
  }

  /**
   * TPM2_Quote over the selected PCRs with `qualifyingData` as extraData, signed with the key's
   * own scheme.
   */
  async quote(handle: number, qualifyingData: Buffer, selections: readonly PcrSelection[]): Promise<Quote> {
    const w = new TpmWriter().sized(qualifyingData).u16(TPM_ALG.NULL);
    writePcrSelections(w, selections);
    const { parameters: r } = await this.execute({
      name: 'Quote',
      code: TPM_CC.Quote,
      handles: [handle],
      authHandles: 1,
      parameters: w.toBuffer(),
    });
    const attest = r.sized('quoted');
    const signature = r.bytes(r.remaining, 'signature');
    return { attest, signature };
  }

  /** TPM2_FlushContext: frees a transient object or session. */
  async flushContext(handle: number): Promise<void> {
    await this.execute({
      name: 'FlushContext',
      code: TPM_CC.FlushContext,
      parameters: new TpmWriter().u32(handle).toBuffer(),
    });
  }

  /** TPM2_EvictControl in the owner hierarchy: persist `handle` at `persistentHandle`, or evict a persistent one. */
  async evictControl(handle: number, persistentHandle: number): Promise<void> {
    await this.execute({
      name: 'EvictControl',
      code: TPM_CC.EvictControl,
      handles: [TPM_RH.OWNER, handle],
      authHandles: 1,
      parameters: new TpmWriter().u32(persistentHandle).toBuffer(),
    });
  }

  /**
   * Creates a primary key, runs `use` with it and always flushes it. Sequences are serialised
   * so concurrent callers never exhaust the TPM's object slots.
   */
  withPrimaryKey<T>(hierarchy: Hierarchy, template: TpmPublic, use: (key: LoadedKey) => Promise<T>): Promise<T> {
    return this.sequences.run(async () => {
      const key = await this.createPrimary(hierarchy, template);
      try {
        return await use(key);
      } finally {
        await this.flushContext(key.handle);
      }
    });
  }

  private async execute(spec: CommandSpec): Promise<CommandResponse> {
    const response = await this.transport.send(marshalCommand(spec));
    return parseResponse(spec, response);
  }
}
