import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createTempDir, runChecked, startSwtpm, useTestEkCa } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseQuoteInfo } from './attest.js';
import { parseResponse } from './command.js';
import type { CommandSpec } from './command.js';
import { TPM_ALG, TPM_CC, TPM_PT, TPM_ST } from './constants.js';
import { derSequence, readEkCertificate } from './ek.js';
import { TpmError, TpmParseError } from './errors.js';
import { TpmReader, TpmWriter } from './marshal.js';
import { readNvPublic } from './nv.js';
import { marshalPublic, parsePublic, publicKeyObject } from './public-area.js';
import type { TpmPublic } from './public-area.js';
import { marshalSignature, parseSignature, verifySignature } from './signature.js';
import { SocketTransport } from './socket-transport.js';
import { akTemplate, ekTemplate } from './templates.js';
import { Tpm } from './tpm.js';
import type { TpmTransport } from './transport.js';

// Property-based fuzzing of everything that reads TPM output, with fast-check: fixed seeds and
// bounded runs, so a failure reproduces exactly. Real responses are captured once from a
// manufactured swtpm and then replayed, mutated, to fresh Tpm clients: every client method must
// either succeed or fail with TpmParseError or TpmError, never a TypeError/RangeError from deep
// inside, and never hang.

// ---------------------------------------------------------------------------------------------
// Structure-aware mutations: bit flips, truncations, insertions, deletions, overwritten fields
// and nudged length fields, optionally with the TPM response header's size fixed up afterwards
// so that the mutation reaches the parsers behind the header check.

type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'delete'; at: number; count: number }
  | { kind: 'set8'; at: number; value: number }
  | { kind: 'set16'; at: number; value: number }
  | { kind: 'set32'; at: number; value: number }
  | { kind: 'nudge16'; at: number; delta: number };

const interesting16 = fc.oneof(
  fc.constantFrom(0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0x3ff, 0x400, 0x7fff, 0x8000, 0xfffe, 0xffff),
  fc.integer({ min: 0, max: 0xffff }),
);
const interesting32 = fc.oneof(
  fc.constantFrom(0, 1, 8, 9, 0x100, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff),
  fc.integer({ min: 0, max: 0xffffffff }),
);

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }),
  }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('set8' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 0xff }) }),
  fc.record({ kind: fc.constant('set16' as const), at: fc.nat(), value: interesting16 }),
  fc.record({ kind: fc.constant('set32' as const), at: fc.nat(), value: interesting32 }),
  fc.record({
    kind: fc.constant('nudge16' as const),
    at: fc.nat(),
    delta: fc.oneof(fc.integer({ min: -4, max: 4 }), fc.constantFrom(-256, 256, 0x8000)),
  }),
);

const mutationsArb = fc.array(mutationArb, { minLength: 1, maxLength: 4 });

function applyMutation(input: Buffer, m: Mutation): Buffer {
  const out = Buffer.from(input);
  if (out.length === 0) return m.kind === 'insert' ? Buffer.from(m.bytes) : out;
  const at = m.at % out.length;
  switch (m.kind) {
    case 'flip':
      out[at] = (out[at] ?? 0) ^ (1 << m.bit);
      return out;
    case 'truncate':
      return out.subarray(0, at);
    case 'insert':
      return Buffer.concat([out.subarray(0, at), m.bytes, out.subarray(at)]);
    case 'delete':
      return Buffer.concat([out.subarray(0, at), out.subarray(at + m.count)]);
    case 'set8':
      out[at] = m.value;
      return out;
    case 'set16':
      if (at + 2 <= out.length) out.writeUInt16BE(m.value, at);
      return out;
    case 'set32':
      if (at + 4 <= out.length) out.writeUInt32BE(m.value, at);
      return out;
    case 'nudge16':
      if (at + 2 <= out.length) out.writeUInt16BE((out.readUInt16BE(at) + m.delta) & 0xffff, at);
      return out;
  }
}

function mutate(input: Buffer, mutations: readonly Mutation[]): Buffer {
  return mutations.reduce(applyMutation, input);
}

/** A TPM response with its header's responseSize set to its real length (when it has a header). */
function fixResponseSize(response: Buffer): Buffer {
  if (response.length >= 6) response.writeUInt32BE(response.length, 2);
  return response;
}

/** Throws unless `err` is one of the TPM library's typed errors. */
function expectTyped(err: unknown, context: () => string): void {
  if (err instanceof TpmParseError || err instanceof TpmError) {
    expect(err.message.length).toBeGreaterThan(0);
    return;
  }
  throw new Error(`untyped failure (${context()})`, { cause: err });
}

function typedOutcome<T>(parse: () => T, context: () => string): T | undefined {
  try {
    return parse();
  } catch (err) {
    expectTyped(err, context);
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Recording and replaying real TPM traffic.

class RecordingTransport implements TpmTransport {
  readonly description = 'recording';
  responses: Buffer[] = [];
  constructor(private readonly inner: TpmTransport) {}
  async send(command: Buffer): Promise<Buffer> {
    const response = await this.inner.send(command);
    this.responses.push(Buffer.from(response));
    return response;
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** TPM_RC_FAILURE, for commands beyond the recorded ones. */
const FAILURE = new TpmWriter().u16(TPM_ST.NO_SESSIONS).u32(10).u32(0x101).toBuffer();

const MAX_EXTRA_COMMANDS = 64;
const LOOP = 'the client keeps sending commands: endless loop';

/** Answers the n-th command with the n-th recorded response, whatever the command is. */
class ReplayTransport implements TpmTransport {
  readonly description = 'replay';
  sent = 0;
  constructor(
    private readonly responses: readonly Buffer[],
    private readonly repeatLast = false,
  ) {}
  send(): Promise<Buffer> {
    const i = this.sent++;
    // A client that keeps sending commands would otherwise spin on resolved promises forever.
    if (i > this.responses.length + MAX_EXTRA_COMMANDS) return Promise.reject(new Error(LOOP));
    const response =
      this.responses[i] ?? (this.repeatLast ? this.responses[this.responses.length - 1] : undefined) ?? FAILURE;
    return Promise.resolve(Buffer.from(response));
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

interface Scenario {
  name: string;
  run: (tpm: Tpm) => Promise<unknown>;
}

const ekCa = useTestEkCa();
let swtpm: Swtpm;
let tpm: Tpm;
const recorded = new Map<string, Buffer[]>();

/** The credential tpm2_makecredential makes for the AK's name and the RSA EK. */
async function toolCredential(): Promise<{ credentialBlob: Buffer; encryptedSecret: Buffer }> {
  const temp = await createTempDir('constellation-response-fuzz-');
  const dir = temp.path;
  const ekPublic = await tpm.withEndorsementKey('rsa', (ek) => Promise.resolve(ek.publicBytes));
  const akName = await tpm.withPrimaryKey('endorsement', akTemplate('ecc'), (ak) => Promise.resolve(ak.name));
  await writeFile(join(dir, 'ek.pub'), new TpmWriter().sized(ekPublic).toBuffer());
  await writeFile(join(dir, 'secret.bin'), Buffer.alloc(32, 7));
  await runChecked(
    'tpm2_makecredential',
    [
      '-T',
      'none',
      '-e',
      join(dir, 'ek.pub'),
      '-s',
      join(dir, 'secret.bin'),
      '-n',
      akName.toString('hex'),
      '-o',
      join(dir, 'cred.out'),
    ],
    { timeoutMs: 10_000 },
  );
  const r = new TpmReader(await readFile(join(dir, 'cred.out')), 'tpm2-tools credential');
  await temp.remove();
  r.u32('magic');
  r.u32('version');
  return { credentialBlob: r.sized('credentialBlob'), encryptedSecret: r.sized('secret') };
}

const scenarios: Scenario[] = [];

beforeAll(async () => {
  swtpm = await startSwtpm({ manufacture: { ca: ekCa() } });
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, timeoutMs: 10_000 }));
  const credential = await toolCredential();
  scenarios.push(
    { name: 'startup', run: (t) => t.startup() },
    { name: 'getRandom', run: (t) => t.getRandom(40) },
    { name: 'pcrBanks', run: (t) => t.pcrBanks() },
    { name: 'pcrRead', run: (t) => t.pcrRead('sha256', [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]) },
    { name: 'pcrExtend', run: (t) => t.pcrExtend(16, [{ hash: 'sha256', digest: Buffer.alloc(32, 1) }]) },
    { name: 'pcrEvent', run: (t) => t.pcrEvent(16, Buffer.from('event')) },
    { name: 'getTpmProperty', run: (t) => t.getTpmProperty(TPM_PT.NV_BUFFER_MAX) },
    {
      name: 'quote',
      run: (t) =>
        t.withPrimaryKey('endorsement', akTemplate('ecc'), async (ak) => {
          const readBack = await t.readPublic(ak.handle);
          const quote = await t.quote(ak.handle, Buffer.alloc(32, 5), [{ hash: 'sha256', pcrs: [0, 9] }]);
          // verifySignature is fuzzed on its own below (it has a known untyped failure).
          return { readBack, info: parseQuoteInfo(quote.attest), signature: parseSignature(quote.signature) };
        }),
    },
    { name: 'rsaEk', run: (t) => t.withEndorsementKey('rsa', (ek) => Promise.resolve(ek.name)) },
    { name: 'ekCertificate', run: (t) => readEkCertificate(t, 'rsa') },
    { name: 'missingNvIndex', run: (t) => t.nvRead(0x01500099).catch((e: unknown) => e) },
    {
      name: 'activateCredential',
      run: (t) =>
        t.activateCredentialWithKeys(akTemplate('ecc'), 'rsa', credential.credentialBlob, credential.encryptedSecret),
    },
  );
  for (const scenario of scenarios) {
    const recorder = new RecordingTransport(tpm.transport);
    await scenario.run(new Tpm(recorder));
    recorded.set(scenario.name, recorder.responses);
  }
}, 120_000);

afterAll(async () => {
  // Absent when beforeAll failed before creating them.
  await (tpm as Tpm | undefined)?.close();
  await (swtpm as Swtpm | undefined)?.stop();
});

function recordedFor(name: string): Buffer[] {
  const responses = recorded.get(name);
  if (responses === undefined || responses.length === 0) throw new Error(`nothing recorded for ${name}`);
  return responses;
}

// ---------------------------------------------------------------------------------------------
// The command specs the client sends, for parseResponse on its own.

const SPECS: CommandSpec[] = [
  { name: 'Startup', code: TPM_CC.Startup },
  { name: 'GetRandom', code: TPM_CC.GetRandom },
  { name: 'GetCapability', code: TPM_CC.GetCapability },
  { name: 'PCR_Read', code: TPM_CC.PCR_Read },
  { name: 'PCR_Extend', code: TPM_CC.PCR_Extend, authHandles: 1 },
  { name: 'PCR_Event', code: TPM_CC.PCR_Event, authHandles: 1 },
  { name: 'CreatePrimary', code: TPM_CC.CreatePrimary, authHandles: 1, responseHandles: 1 },
  { name: 'ReadPublic', code: TPM_CC.ReadPublic },
  { name: 'Quote', code: TPM_CC.Quote, authHandles: 1 },
  { name: 'FlushContext', code: TPM_CC.FlushContext },
  { name: 'EvictControl', code: TPM_CC.EvictControl, authHandles: 1 },
  { name: 'NV_ReadPublic', code: TPM_CC.NV_ReadPublic },
  { name: 'NV_Read', code: TPM_CC.NV_Read, authHandles: 1 },
  { name: 'StartAuthSession', code: TPM_CC.StartAuthSession, responseHandles: 1 },
  { name: 'PolicySecret', code: TPM_CC.PolicySecret, authHandles: 1 },
  { name: 'ActivateCredential', code: TPM_CC.ActivateCredential, authHandles: 2 },
];

/** Checks what parseResponse promises about a response it accepted. */
function checkAccepted(spec: CommandSpec, response: Buffer, handles: number[], parameters: TpmReader): void {
  expect(response.readUInt32BE(2)).toBe(response.length);
  expect(response.readUInt32BE(6)).toBe(0);
  expect([TPM_ST.NO_SESSIONS, TPM_ST.SESSIONS]).toContain(response.readUInt16BE(0));
  expect(handles).toHaveLength(spec.responseHandles ?? 0);
  expect(parameters.remaining).toBeLessThanOrEqual(response.length - 10);
}

describe('TPM response parsing under hostile input (fast-check)', () => {
  it('parseResponse: random bytes and random bodies behind plausible headers', () => {
    const headerAndBody = fc
      .record({
        tag: fc.constantFrom(TPM_ST.NO_SESSIONS, TPM_ST.SESSIONS, 0x00c4, 0x8003),
        rc: fc.oneof(fc.constant(0), interesting32),
        body: fc.uint8Array({ maxLength: 200 }),
        sizeDelta: fc.constantFrom(0, 0, 0, -1, 1, 0x10000),
      })
      .map(({ tag, rc, body, sizeDelta }) => {
        const b = new TpmWriter().u16(tag).u32(0).u32(rc).bytes(body).toBuffer();
        b.writeUInt32BE((b.length + sizeDelta) >>> 0, 2);
        return b;
      });
    fc.assert(
      fc.property(
        fc.constantFrom(...SPECS),
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
          headerAndBody,
        ),
        (spec, response) => {
          const parsed = typedOutcome(
            () => parseResponse(spec, response),
            () => `${spec.name} ${response.toString('hex')}`,
          );
          if (parsed !== undefined) checkAccepted(spec, response, parsed.handles, parsed.parameters);
        },
      ),
      { seed: 0x7e5701, numRuns: 2000 },
    );
  });

  it('parseResponse: mutated real responses for every command the client sends', () => {
    const corpus = [...recorded.values()].flat();
    fc.assert(
      fc.property(
        fc.constantFrom(...SPECS),
        fc.constantFrom(...corpus),
        mutationsArb,
        fc.boolean(),
        (spec, original, mutations, fixSize) => {
          const mutated = mutate(original, mutations);
          const response = fixSize ? fixResponseSize(mutated) : mutated;
          const parsed = typedOutcome(
            () => parseResponse(spec, response),
            () => `${spec.name} ${response.toString('hex')}`,
          );
          if (parsed !== undefined) checkAccepted(spec, response, parsed.handles, parsed.parameters);
        },
      ),
      { seed: 0x7e5702, numRuns: 2000 },
    );
  });

  it('replaying the unmutated recording reproduces every method (so the replay reaches the parsers)', async () => {
    for (const scenario of scenarios) {
      const transport = new ReplayTransport(recordedFor(scenario.name));
      const result = await scenario.run(new Tpm(transport));
      expect(transport.sent, scenario.name).toBe(recordedFor(scenario.name).length);
      if (scenario.name === 'missingNvIndex') expect(result).toBeInstanceOf(TpmError);
      else expect(result, scenario.name).not.toBeInstanceOf(Error);
    }
    expect(
      await scenarios
        .find((s) => s.name === 'activateCredential')
        ?.run(new Tpm(new ReplayTransport(recordedFor('activateCredential')))),
    ).toEqual(Buffer.alloc(32, 7));
  });

  it('every client method, fed mutated real responses, succeeds or throws TpmParseError/TpmError', async () => {
    const names = scenarios.map((s) => s.name);
    expect(names.length).toBeGreaterThan(10);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...scenarios),
        fc.nat(),
        mutationsArb,
        fc.boolean(),
        async (scenario, which, mutations, fixSize) => {
          const responses: Buffer[] = recordedFor(scenario.name).map((r) => Buffer.from(r));
          const index = which % responses.length;
          const mutated = mutate(responses[index] ?? Buffer.alloc(0), mutations);
          responses[index] = fixSize ? fixResponseSize(mutated) : mutated;
          const transport = new ReplayTransport(responses);
          try {
            const result = await scenario.run(new Tpm(transport));
            // The missing-index scenario returns its error instead of throwing it.
            if (result instanceof Error)
              expectTyped(result, () => `${scenario.name}: response ${index} ${mutated.toString('hex')}`);
          } catch (err) {
            expectTyped(err, () => `${scenario.name}: response ${index} ${mutated.toString('hex')}`);
          }
          // Bounded: at most the recorded commands plus retries and a few extra chunks.
          expect(transport.sent).toBeLessThanOrEqual(responses.length + MAX_EXTRA_COMMANDS);
        },
      ),
      { seed: 0x7e5703, numRuns: 1500 },
    );
  });

  it('a TPM that answers every command with the same mutated response never makes a method loop', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('getRandom', 'pcrRead', 'ekCertificate'),
        mutationsArb,
        async (name, mutations) => {
          const original = recordedFor(name);
          // Replay all but the last response, then repeat the mutated last one forever.
          const responses = [...original.slice(0, -1), fixResponseSize(mutate(original.at(-1) ?? FAILURE, mutations))];
          const transport = new ReplayTransport(responses, true);
          const scenario = scenarios.find((s) => s.name === name);
          await scenario
            ?.run(new Tpm(transport))
            .then((result) => {
              if (result instanceof Error) expectTyped(result, () => name);
            })
            .catch((err: unknown) => {
              expectTyped(err, () => name);
            });
          expect(transport.sent).toBeLessThanOrEqual(original.length + MAX_EXTRA_COMMANDS);
        },
      ),
      { seed: 0x7e5704, numRuns: 300 },
    );
  });

  // BUG (found while fuzzing the PCR_Read loop): Tpm.pcrRead repeats PCR_Read until every
  // requested PCR has a value, but stores whatever PCRs the TPM says it returned. A TPM that
  // answers with a PCR that was not requested (here PCR 10 when 0 and 1 were asked for, with a
  // consistent count and digest) never shrinks the remaining set, so pcrRead sends PCR_Read
  // forever: a hang instead of a TpmParseError. Minimal response parameters:
  //   pcrUpdateCounter 1, TPML_PCR_SELECTION { 1, sha256, 3, 00 04 00 }, TPML_DIGEST { 1, 32 zero bytes }.
  // Fixed; kept as a regression test.
  it('pcrRead refuses PCRs the TPM returns without being asked (no endless PCR_Read loop)', async () => {
    const parameters = new TpmWriter()
      .u32(1)
      .u32(1)
      .u16(TPM_ALG.SHA256)
      .u8(3)
      .bytes(Buffer.from([0x00, 0x04, 0x00]))
      .u32(1)
      .sized(Buffer.alloc(32))
      .toBuffer();
    const response = new TpmWriter()
      .u16(TPM_ST.NO_SESSIONS)
      .u32(10 + parameters.length)
      .u32(0)
      .bytes(parameters)
      .toBuffer();
    const transport = new ReplayTransport([response], true);
    await expect(new Tpm(transport).pcrRead('sha256', [0, 1])).rejects.toThrow(TpmParseError);
  });
});

describe('TPM structure parsers under hostile input (fast-check)', () => {
  const quoteScenario = (): Buffer[] => recordedFor('quote');

  /** The TPMS_ATTEST and TPMT_SIGNATURE of the recorded Quote response. */
  function recordedQuote(): { attest: Buffer; signature: Buffer } {
    for (const response of quoteScenario()) {
      try {
        const { parameters } = parseResponse({ name: 'Quote', code: TPM_CC.Quote }, response);
        const attest = parameters.sized('quoted');
        if (attest.length > 4 && attest.readUInt32BE(0) === 0xff544347) {
          return { attest, signature: parameters.bytes(parameters.remaining, 'signature') };
        }
      } catch {
        // not the quote response
      }
    }
    throw new Error('no quote recorded');
  }

  it('parseQuoteInfo: random bytes and mutated real quotes; anything accepted is a well-formed quote', () => {
    const { attest } = recordedQuote();
    expect(parseQuoteInfo(attest).extraData).toEqual(Buffer.alloc(32, 5));
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 400 }).map((b) => Buffer.from(b)),
          mutationsArb.map((m) => mutate(attest, m)),
        ),
        (input) => {
          const info = typedOutcome(
            () => parseQuoteInfo(input),
            () => input.toString('hex'),
          );
          if (info === undefined) return;
          expect(input.readUInt32BE(0)).toBe(0xff544347);
          expect(info.extraData.length).toBeLessThanOrEqual(64);
          expect(info.pcrDigest.length).toBeLessThanOrEqual(64);
          for (const selection of info.pcrSelections) {
            for (const pcr of selection.pcrs) expect(pcr).toBeLessThan(32);
          }
        },
      ),
      { seed: 0x7e5705, numRuns: 2000 },
    );
  });

  it('parseSignature and verifySignature: anything accepted re-marshals to the same bytes, mutated signatures do not verify', () => {
    const { attest, signature } = recordedQuote();
    const signer = parsePublic(marshalPublic(akTemplate('ecc')));
    const rsa = marshalSignature({ algorithm: 'rsassa', hash: 'sha256', signature: Buffer.alloc(256, 0x42) });
    const pss = marshalSignature({ algorithm: 'rsapss', hash: 'sha384', signature: Buffer.alloc(256, 0x17) });
    // The AK's real public key (unique x/y) is in the recorded ReadPublic response.
    let akPublic: ReturnType<typeof parsePublic> | undefined;
    for (const response of quoteScenario()) {
      try {
        const { parameters } = parseResponse({ name: 'ReadPublic', code: TPM_CC.ReadPublic }, response);
        const candidate = parsePublic(parameters.sized('outPublic'));
        if (candidate.type === 'ecc' && candidate.x.length === 32) akPublic = candidate;
      } catch {
        // another response
      }
    }
    expect(akPublic).toBeDefined();
    expect(signer.type).toBe('ecc');
    const key = akPublic ?? signer;
    expect(verifySignature(key, attest, parseSignature(signature))).toBe(true);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
          fc.tuple(fc.constantFrom(signature, rsa, pss), mutationsArb).map(([s, m]) => mutate(s, m)),
        ),
        (input) => {
          const sig = typedOutcome(
            () => parseSignature(input),
            () => input.toString('hex'),
          );
          if (sig === undefined) return;
          expect(marshalSignature(sig).equals(input)).toBe(true);
          const verified = typedOutcome(
            () => verifySignature(key, attest, sig),
            () => `verify ${input.toString('hex')}`,
          );
          if (verified === true) expect(input.equals(signature)).toBe(true);
        },
      ),
      { seed: 0x7e5706, numRuns: 2000 },
    );
  });

  it('parsePublic: random bytes and mutated templates; anything accepted re-marshals to the same bytes', () => {
    const templates = [akTemplate('ecc'), akTemplate('rsa'), ekTemplate('ecc'), ekTemplate('rsa')].map(marshalPublic);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 400 }).map((b) => Buffer.from(b)),
          fc.tuple(fc.constantFrom(...templates), mutationsArb).map(([t, m]) => mutate(t, m)),
        ),
        (input) => {
          const pub = typedOutcome(
            () => parsePublic(input),
            () => input.toString('hex'),
          );
          if (pub === undefined) return;
          expect(marshalPublic(pub).equals(input)).toBe(true);
        },
      ),
      { seed: 0x7e5707, numRuns: 2000 },
    );
  });

  it('readNvPublic: mutated NV_ReadPublic parameters; anything accepted has a name matching its public area', () => {
    // The parameters of the recorded NV_ReadPublic response for the RSA EK certificate index.
    let nvParameters: Buffer | undefined;
    for (const response of recordedFor('ekCertificate')) {
      try {
        const { parameters } = parseResponse({ name: 'NV_ReadPublic', code: TPM_CC.NV_ReadPublic }, response);
        const bytes = parameters.bytes(parameters.remaining, 'all');
        readNvPublic(new TpmReader(bytes, 'probe'));
        nvParameters = bytes;
        break;
      } catch {
        // another response
      }
    }
    if (nvParameters === undefined) throw new Error('no NV_ReadPublic response recorded');
    const original = nvParameters;
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
          mutationsArb.map((m) => mutate(original, m)),
        ),
        (input) => {
          const pub = typedOutcome(
            () => readNvPublic(new TpmReader(input, 'NV_ReadPublic parameters')),
            () => input.toString('hex'),
          );
          if (pub === undefined) return;
          // Only the name's hash is checked, so an accepted input must still carry a matching name.
          expect(input.subarray(input.length - pub.name.length).equals(pub.name)).toBe(true);
          expect(pub.authPolicy.length).toBeLessThanOrEqual(64);
        },
      ),
      { seed: 0x7e5708, numRuns: 2000 },
    );
  });

  it('derSequence: random bytes and mutated EK certificates; a result is always a prefix with a consistent length', async () => {
    const cert = await readEkCertificate(tpm, 'rsa');
    if (cert === undefined) throw new Error('the manufactured swtpm has no RSA EK certificate');
    const padded = Buffer.concat([cert, Buffer.alloc(32, 0xff)]);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
          fc
            .tuple(fc.constantFrom(0x30), fc.uint8Array({ maxLength: 8 }), fc.uint8Array({ maxLength: 300 }))
            .map(([tag, len, body]) => Buffer.concat([Buffer.from([tag]), len, body])),
          fc.tuple(fc.constantFrom(cert, padded), mutationsArb).map(([c, m]) => mutate(c, m)),
        ),
        (input) => {
          const out = typedOutcome(
            () => derSequence(input, 'fuzzed certificate'),
            () => input.toString('hex'),
          );
          if (out === undefined) return;
          expect(out[0]).toBe(0x30);
          expect(input.subarray(0, out.length).equals(out)).toBe(true);
          const first = out[1] ?? 0;
          const header = first & 0x80 ? 2 + (first & 0x7f) : 2;
          const length = first & 0x80 ? out.readUIntBE(2, first & 0x7f) : first;
          expect(out.length).toBe(header + length);
        },
      ),
      { seed: 0x7e5709, numRuns: 2000 },
    );
  });

  /** The real public areas the swtpm returned (AK and EKs, ECC and RSA), as TPMT_PUBLIC bytes. */
  function recordedPublics(): Buffer[] {
    const out: Buffer[] = [];
    for (const response of [...recorded.values()].flat()) {
      for (const spec of [
        { name: 'CreatePrimary', code: TPM_CC.CreatePrimary, responseHandles: 1 },
        { name: 'ReadPublic', code: TPM_CC.ReadPublic },
      ]) {
        try {
          const publicBytes = parseResponse(spec, response).parameters.sized('outPublic');
          parsePublic(publicBytes);
          out.push(publicBytes);
        } catch {
          // another kind of response
        }
      }
    }
    return out;
  }

  // Regression (was a bug, found by the property below): publicKeyObject hands 32-byte ECC coordinates to Node's
  // createPublicKey unchecked, and a point that is not on P-256 comes back as Node's
  // TypeError ERR_CRYPTO_INVALID_JWK instead of a TpmParseError. verifySignature calls it, so
  // verifying a quote against a hostile TPMT_PUBLIC throws an untyped error instead of
  // returning false or throwing TpmParseError. Minimal input: the ECC AK template with
  // x = y = 32 zero bytes. Fixed; kept as a regression test.
  it('publicKeyObject of an ECC point not on P-256 throws TpmParseError', () => {
    const offCurve: TpmPublic = { ...akTemplate('ecc'), x: Buffer.alloc(32), y: Buffer.alloc(32) } as TpmPublic;
    expect(() => publicKeyObject(offCurve)).toThrow(TpmParseError);
  });

  it('publicKeyObject and verifySignature on mutated real public areas: a key, false, or TpmParseError', () => {
    const publics = recordedPublics();
    expect(publics.length).toBeGreaterThan(2);
    const { attest, signature } = recordedQuote();
    const sig = parseSignature(signature);
    const rsaSig = parseSignature(
      marshalSignature({ algorithm: 'rsassa', hash: 'sha256', signature: Buffer.alloc(256, 0x42) }),
    );
    fc.assert(
      fc.property(fc.constantFrom(...publics), mutationsArb, (original, mutations) => {
        const input = mutate(original, mutations);
        const pub = typedOutcome(
          () => parsePublic(input),
          () => input.toString('hex'),
        );
        if (pub === undefined) return;
        for (const check of [
          () => publicKeyObject(pub),
          () => verifySignature(pub, attest, sig),
          () => verifySignature(pub, attest, rsaSig),
        ]) {
          try {
            const result = check();
            // A mutated key never verifies the real quote, unless the mutation left the key alone.
            if (result === true)
              expect(publicKeyObject(pub).export({ format: 'jwk' })).toEqual(
                publicKeyObject(parsePublic(original)).export({ format: 'jwk' }),
              );
          } catch (err) {
            expectTyped(err, () => input.toString('hex'));
          }
        }
      }),
      { seed: 0x7e570a, numRuns: 1000 },
    );
  });
});
