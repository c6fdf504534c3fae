import { randomBytes } from 'node:crypto';
import { TPM_ALG, TPM_CAP, TPM_CC, TPM_PT, TPM_RH, TPM_RS_PW, TPM_SE, TPM_SU } from './constants.js';
import { marshalCommand, parseResponse } from './command.js';
import type { CommandResponse, CommandSpec } from './command.js';
import { TpmError, TpmParseError } from './errors.js';
import { hashAlgorithm, hashAlgorithmId, isKnownHashAlgorithm } from './hash-algorithm.js';
import type { HashName } from './hash-algorithm.js';
import { TpmWriter } from './marshal.js';
import { MAX_NV_READ_BYTES, readNvPublic } from './nv.js';
import type { NvPublic } from './nv.js';
import { readPcrSelections, writePcrSelections } from './pcr-selection.js';
import type { PcrSelection } from './pcr-selection.js';
import { marshalPublic, parsePublic, publicName } from './public-area.js';
import type { RsaPublic, TpmPublic } from './public-area.js';
import { ekTemplate } from './templates.js';
import type { KeyAlgorithm } from './templates.js';
import { PrioritySerialQueue } from './priority.js';
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

/** A primary key to create: which hierarchy, from which template. */
export interface PrimaryKeySpec {
  hierarchy: Hierarchy;
  template: TpmPublic;
}

/** A started auth session. */
export interface AuthSession {
  handle: number;
  nonceTpm: Buffer;
}

const HIERARCHY_HANDLE: Record<Hierarchy, number> = { owner: TPM_RH.OWNER, endorsement: TPM_RH.ENDORSEMENT };
const TPM_RC_INITIALIZE = 0x100;
/** TPM_RC_YIELDED, TPM_RC_TESTING, TPM_RC_RETRY. */
const RETRY_CODES = new Set([0x908, 0x90a, 0x922]);
const MAX_RETRIES = 20;
const MAX_EVENT_BYTES = 1024;
/** Chunk size when the TPM does not report TPM_PT_NV_BUFFER_MAX; every TPM 2.0 supports it. */
const DEFAULT_NV_BUFFER = 1024;
/** TPM2B_ID_OBJECT and TPM2B_ENCRYPTED_SECRET bounds (TPM 2.0 Part 2: sizeof(TPMU_ENCRYPTED_SECRET) etc.). */
const MAX_CREDENTIAL_BLOB = 2 + 64 + 2 + 64;
const MAX_ENCRYPTED_SECRET = 512;
/** Persistent handle of the RSA 2048 EK (TCG TPM v2.0 Provisioning Guidance, TCG EK Credential Profile). */
const RSA_EK_PERSISTENT_HANDLE = 0x81010001;

/**
 * A TPM 2.0 reached through a transport. Each method is one TPM command, marshalled here.
 * Multi-command sequences that create transient objects go through `withKey`, which holds an
 * exclusive lock and always flushes, because swtpm has no resource manager and only three
 * object slots.
 */
export class Tpm {
  readonly transport: TpmTransport;
  private readonly sequences = new PrioritySerialQueue();
  private nvBufferMax: number | undefined;
  /** The RSA EK at its persistent handle, once this client persisted or found it there. */
  private residentRsaEk: { handle: number; publicBytes: Buffer } | undefined;
  /** Set when the TPM would not keep the RSA EK at its persistent handle: regenerate it each time. */
  private rsaEkNotPersistable = false;

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
      // A PCR nobody asked for would never shrink `remaining`: the loop would not end.
      const unasked = read.filter((pcr) => !remaining.includes(pcr));
      if (unasked.length > 0)
        throw new TpmParseError(`TPM2_PCR_Read: returned PCRs ${unasked.join(',')}, which were not requested`);
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

  /** One TPM property (TPM2_GetCapability, TPM_CAP_TPM_PROPERTIES), or undefined when the TPM does not report it. */
  async getTpmProperty(property: number): Promise<number | undefined> {
    const parameters = new TpmWriter().u32(TPM_CAP.TPM_PROPERTIES).u32(property).u32(1).toBuffer();
    const { parameters: r } = await this.execute({ name: 'GetCapability', code: TPM_CC.GetCapability, parameters });
    r.u8('moreData');
    const capability = r.u32('capability');
    if (capability !== TPM_CAP.TPM_PROPERTIES)
      throw new TpmParseError(`TPM2_GetCapability returned capability ${capability}`);
    const count = r.u32('tpmProperty.count');
    for (let i = 0; i < count; i++) {
      const tag = r.u32(`tpmProperty[${i}].property`);
      const value = r.u32(`tpmProperty[${i}].value`);
      if (tag === property) return value;
    }
    return undefined;
  }

  /** TPM2_NV_ReadPublic: the index's public area and name (no authorisation needed). */
  async nvReadPublic(index: number): Promise<NvPublic> {
    const { parameters: r } = await this.execute({
      name: 'NV_ReadPublic',
      code: TPM_CC.NV_ReadPublic,
      handles: [index],
    });
    const pub = readNvPublic(r);
    if (pub.nvIndex !== index) {
      throw new TpmParseError(`TPM2_NV_ReadPublic of 0x${index.toString(16)} described 0x${pub.nvIndex.toString(16)}`);
    }
    return pub;
  }

  /**
   * The whole content of an NV index (TPM2_NV_Read in chunks of at most TPM_PT_NV_BUFFER_MAX),
   * authorised by the index itself with an empty password. Indexes larger than `maxBytes`
   * are refused before anything is read.
   */
  async nvRead(index: number, maxBytes = MAX_NV_READ_BYTES): Promise<Buffer> {
    const { dataSize } = await this.nvReadPublic(index);
    if (dataSize > maxBytes) {
      throw new TpmParseError(`NV index 0x${index.toString(16)} holds ${dataSize} bytes, at most ${maxBytes} allowed`);
    }
    const chunk = await this.nvChunkSize();
    const out = Buffer.alloc(dataSize);
    for (let offset = 0; offset < dataSize;) {
      const size = Math.min(chunk, dataSize - offset);
      const { parameters: r } = await this.execute({
        name: 'NV_Read',
        code: TPM_CC.NV_Read,
        handles: [index, index],
        authHandles: 1,
        parameters: new TpmWriter().u16(size).u16(offset).toBuffer(),
      });
      const data = r.sized('data', size);
      if (data.length !== size) {
        throw new TpmParseError(`TPM2_NV_Read returned ${data.length} bytes at offset ${offset}, asked for ${size}`);
      }
      data.copy(out, offset);
      offset += size;
    }
    return out;
  }

  /**
   * TPM2_StartAuthSession for an unbound, unsalted policy session with SHA-256 and no
   * parameter encryption. The caller must flush it.
   */
  async startAuthSession(): Promise<AuthSession> {
    const parameters = new TpmWriter()
      .sized(randomBytes(32)) // nonceCaller
      .sized(Buffer.alloc(0)) // encryptedSalt: none, tpmKey is TPM_RH_NULL
      .u8(TPM_SE.POLICY)
      .u16(TPM_ALG.NULL) // symmetric
      .u16(TPM_ALG.SHA256)
      .toBuffer();
    const { handles, parameters: r } = await this.execute({
      name: 'StartAuthSession',
      code: TPM_CC.StartAuthSession,
      handles: [TPM_RH.NULL, TPM_RH.NULL],
      parameters,
      responseHandles: 1,
    });
    const nonceTpm = r.sized('nonceTPM', 64);
    return { handle: handles[0] ?? 0, nonceTpm };
  }

  /**
   * TPM2_PolicySecret: extends `session`'s policy with PolicySecret(authEntity), authorised with
   * an empty password on `authEntity`. With TPM_RH_ENDORSEMENT this satisfies the TCG EK policy.
   */
  async policySecret(session: AuthSession | number, authEntity: number = TPM_RH.ENDORSEMENT): Promise<void> {
    const sessionHandle = typeof session === 'number' ? session : session.handle;
    const parameters = new TpmWriter()
      .sized(Buffer.alloc(0)) // nonceTPM: not needed without an expiration
      .sized(Buffer.alloc(0)) // cpHashA
      .sized(Buffer.alloc(0)) // policyRef
      .u32(0) // expiration: none
      .toBuffer();
    await this.execute({
      name: 'PolicySecret',
      code: TPM_CC.PolicySecret,
      handles: [authEntity, sessionHandle],
      authHandles: 1,
      parameters,
    });
  }

  /**
   * TPM2_ActivateCredential: recovers the secret a verifier bound to the AK's name and the EK.
   * `credentialBlob` is the content of the TPM2B_ID_OBJECT (integrityHMAC TPM2B || encIdentity)
   * and `encryptedSecret` the content of the TPM2B_ENCRYPTED_SECRET, both without their
   * outer size. The EK is authorised by a fresh PolicySecret(TPM_RH_ENDORSEMENT) session,
   * which is always flushed.
   */
  async activateCredential(
    akHandle: number,
    ekHandle: number,
    credentialBlob: Buffer,
    encryptedSecret: Buffer,
  ): Promise<Buffer> {
    if (credentialBlob.length > MAX_CREDENTIAL_BLOB)
      throw new RangeError(`credential blob of ${credentialBlob.length} bytes exceeds ${MAX_CREDENTIAL_BLOB}`);
    if (encryptedSecret.length > MAX_ENCRYPTED_SECRET)
      throw new RangeError(`encrypted secret of ${encryptedSecret.length} bytes exceeds ${MAX_ENCRYPTED_SECRET}`);
    const session = await this.startAuthSession();
    return this.finallyFlush([session.handle], async () => {
      await this.policySecret(session, TPM_RH.ENDORSEMENT);
      const { parameters: r } = await this.execute({
        name: 'ActivateCredential',
        code: TPM_CC.ActivateCredential,
        handles: [akHandle, ekHandle],
        authSessions: [TPM_RS_PW, session.handle],
        parameters: new TpmWriter().sized(credentialBlob).sized(encryptedSecret).toBuffer(),
      });
      return r.sized('certInfo', 64);
    });
  }

  /** Regenerates the TCG default EK (RSA 2048 or ECC P-256), runs `use` with it and always flushes it. */
  withEndorsementKey<T>(algorithm: KeyAlgorithm, use: (ek: LoadedKey) => Promise<T>): Promise<T> {
    return this.withPrimaryKey('endorsement', ekTemplate(algorithm), use);
  }

  /**
   * Creates several primary keys, runs `use` with them (in the order of `specs`) and always
   * flushes all of them. swtpm has three object slots, so at most three at once.
   */
  withPrimaryKeys<T>(specs: readonly PrimaryKeySpec[], use: (keys: LoadedKey[]) => Promise<T>): Promise<T> {
    if (specs.length > 3) throw new RangeError(`${specs.length} primary keys at once exceed the TPM's 3 object slots`);
    return this.sequences.run(async () => {
      const keys: LoadedKey[] = [];
      return this.finallyFlush(
        () => keys.map((key) => key.handle),
        async () => {
          for (const spec of specs) keys.push(await this.createPrimary(spec.hierarchy, spec.template));
          return use(keys);
        },
      );
    });
  }

  /**
   * The attester's side of credential activation, serialised with every other key sequence:
   * creates the AK (endorsement hierarchy, from `akTemplate`), uses the EK, activates the
   * credential, and flushes every transient object and the policy session.
   *
   * The RSA EK is regenerated (CreatePrimary, tens of milliseconds of RSA key generation) only
   * until it is resident. After the first activation, the TCG's conventional handle 0x81010001
   * is used from then on if it holds exactly the EK just regenerated (swtpm_setup puts it there
   * when it manufactures a TPM); when the handle is empty, the EK is persisted there with
   * EvictControl first (as go-tpm-tools does). A handle holding another key is never touched,
   * and a TPM that refuses to persist (owner authorisation set, no NV room) keeps regenerating.
   * Should a later activation with the resident EK fail and the handle no longer hold that EK
   * (TPM2_Clear, another client), it is retried with a regenerated one. A persistent object
   * takes no transient object slot between commands.
   */
  async activateCredentialWithKeys(
    akTemplate: TpmPublic,
    ekAlgorithm: KeyAlgorithm,
    credentialBlob: Buffer,
    encryptedSecret: Buffer,
  ): Promise<Buffer> {
    const activate = (ak: LoadedKey, ekHandle: number): Promise<Buffer> =>
      this.activateCredential(ak.handle, ekHandle, credentialBlob, encryptedSecret);
    const resident = ekAlgorithm === 'rsa' ? this.residentRsaEk : undefined;
    if (resident !== undefined) {
      try {
        return await this.withPrimaryKey('endorsement', akTemplate, (ak) => activate(ak, resident.handle));
      } catch (err) {
        // A bad credential fails the same way with a regenerated EK; only a vanished or replaced
        // persistent EK (TPM2_Clear, another client) is worth another try.
        if (!(err instanceof TpmError)) throw err;
        if (await this.sequences.run(() => this.holdsPublic(resident.handle, resident.publicBytes))) throw err;
        this.residentRsaEk = undefined;
      }
    }
    return this.withPrimaryKeys(
      [
        { hierarchy: 'endorsement', template: akTemplate },
        { hierarchy: 'endorsement', template: ekTemplate(ekAlgorithm) },
      ],
      async ([ak, ek]) => {
        if (ak === undefined || ek === undefined) throw new Error('withPrimaryKeys returned fewer keys than asked for');
        const secret = await activate(ak, ek.handle);
        if (ekAlgorithm === 'rsa' && !this.rsaEkNotPersistable) await this.makeRsaEkResident(ek);
        return secret;
      },
    );
  }

  /**
   * Adopts the RSA EK persisted at 0x81010001 (where swtpm_setup and most platforms leave it)
   * when it is exactly a TCG-template EK with `modulus`, the key the EK certificate certifies:
   * returns its public area, and activations use the handle from the start. Anything else there
   * (no key, another template, another key) is left alone and undefined returned; the caller then
   * regenerates the EK. Saves the tens of milliseconds of RSA key generation a regeneration costs.
   */
  adoptResidentRsaEk(modulus: Buffer): Promise<Buffer | undefined> {
    const certified = marshalPublic({ ...(ekTemplate('rsa') as RsaPublic), modulus });
    return this.sequences.run(async () => {
      if (!(await this.holdsPublic(RSA_EK_PERSISTENT_HANDLE, certified))) return undefined;
      this.residentRsaEk = { handle: RSA_EK_PERSISTENT_HANDLE, publicBytes: certified };
      return certified;
    });
  }

  /**
   * Persists the freshly created RSA EK `ek` at RSA_EK_PERSISTENT_HANDLE, unless that handle is
   * taken; uses the handle from then on if it holds exactly `ek`. Runs inside a sequence.
   */
  private async makeRsaEkResident(ek: LoadedKey): Promise<void> {
    if (!(await this.holdsPublic(RSA_EK_PERSISTENT_HANDLE, undefined))) {
      try {
        await this.evictControl(ek.handle, RSA_EK_PERSISTENT_HANDLE);
      } catch (err) {
        if (!(err instanceof TpmError)) throw err;
        // Refused (owner authorisation, NV space, or another client was quicker): checked below.
      }
    }
    if (await this.holdsPublic(RSA_EK_PERSISTENT_HANDLE, ek.publicBytes)) {
      this.residentRsaEk = { handle: RSA_EK_PERSISTENT_HANDLE, publicBytes: ek.publicBytes };
    } else {
      this.rsaEkNotPersistable = true;
    }
  }

  /**
   * Whether persistent `handle` holds an object (with exactly `publicBytes` when given). Any
   * TPM error, such as TPM_RC_HANDLE for an empty handle, counts as no.
   */
  private async holdsPublic(handle: number, publicBytes: Buffer | undefined): Promise<boolean> {
    try {
      const key = await this.readPublic(handle);
      return publicBytes === undefined || key.publicBytes.equals(publicBytes);
    } catch (err) {
      if (err instanceof TpmError) return false;
      throw err;
    }
  }

  /**
   * Creates a primary key, runs `use` with it and always flushes it. Sequences are serialised
   * so concurrent callers never exhaust the TPM's object slots.
   */
  withPrimaryKey<T>(hierarchy: Hierarchy, template: TpmPublic, use: (key: LoadedKey) => Promise<T>): Promise<T> {
    return this.sequences.run(async () => {
      const key = await this.createPrimary(hierarchy, template);
      return this.finallyFlush([key.handle], () => use(key));
    });
  }

  /**
   * Runs `work`, then flushes `handles` whatever happened. A flush failure is reported only
   * when `work` succeeded, so it never hides the error that matters.
   */
  private async finallyFlush<T>(
    handles: readonly number[] | (() => readonly number[]),
    work: () => Promise<T>,
  ): Promise<T> {
    let result: T;
    try {
      result = await work();
    } catch (err) {
      for (const handle of typeof handles === 'function' ? handles() : handles) {
        await this.flushContext(handle).catch(() => undefined);
      }
      throw err;
    }
    let flushError: Error | undefined;
    for (const handle of typeof handles === 'function' ? handles() : handles) {
      await this.flushContext(handle).catch((err: unknown) => {
        flushError ??= err instanceof Error ? err : new Error(String(err));
      });
    }
    if (flushError !== undefined) throw flushError;
    return result;
  }

  private async nvChunkSize(): Promise<number> {
    if (this.nvBufferMax === undefined) {
      const reported = await this.getTpmProperty(TPM_PT.NV_BUFFER_MAX);
      // Bounded both ways: a zero would loop forever, a huge value overflows our message limit.
      this.nvBufferMax = Math.min(Math.max(reported ?? DEFAULT_NV_BUFFER, 64), 2048);
    }
    return this.nvBufferMax;
  }

  /**
   * Sends one command. TPM_RC_RETRY, YIELDED and TESTING mean "send it again" (swtpm answers
   * RETRY right after NV writes, for example); they are retried a bounded number of times.
   */
  private async execute(spec: CommandSpec): Promise<CommandResponse> {
    const command = marshalCommand(spec);
    for (let attempt = 1; ; attempt++) {
      const response = await this.transport.send(command);
      try {
        return parseResponse(spec, response);
      } catch (err) {
        if (!(err instanceof TpmError && RETRY_CODES.has(err.code)) || attempt >= MAX_RETRIES) throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, 5 * attempt));
    }
  }
}
