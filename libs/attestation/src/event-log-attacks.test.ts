import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  EFI_GLOBAL_VARIABLE_GUID,
  EventLogWriter,
  bankDigest,
  parseEventLog,
  separatorData,
  uefiVariableData,
} from '@constellation/eventlog';
import type { EventPolicy } from '@constellation/eventlog';
import { repoRoot, startSwtpm } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttestationError } from './errors.js';
import type { AttestationFailureReason } from './errors.js';
import { MAX_EVENT_LOG_BYTES } from './event-log-check.js';
import { bootEventPolicy, componentDigest, expectedMeasurements, measureBoot } from './measured-boot.js';
import type { BootComponent } from './measured-boot.js';
import { TpmIssuer } from './tpm-issuer.js';
import { TpmValidator } from './tpm-validator.js';

// A node's measured boot writes its TCG event log in step with its extends; the log travels
// beside the quote, unsigned. Whoever controls the node (or the wire) can send any log: the
// verifier must refuse every log that does not replay to the quoted PCRs, before it reads a word
// of it, and only then apply the policy on its events.

const BOOT: BootComponent[] = [
  { pcr: 4, description: 'kernel', digest: componentDigest('kernel image v1') },
  { pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bootstrapper.mjs v1') },
];
const MEASURED = [4, 9, 15];
const REAL_LOG = join(repoRoot(), 'testdata', 'eventlogs', 'rhel8-uefi.bin');
const SHA1_LOG = join(repoRoot(), 'testdata', 'eventlogs', 'debian-10.bin');

let dir: string;
let swtpm: Swtpm;
let tpm: Tpm;
let genuineLog: Buffer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'event-log-attacks-'));
  swtpm = await startSwtpm();
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  await tpm.startup();
  await measureBoot(tpm, BOOT, { eventLog: join(dir, 'boot.log') });
  genuineLog = await readFile(join(dir, 'boot.log'));
});

afterAll(async () => {
  await tpm.close();
  await swtpm.stop();
  await rm(dir, { recursive: true, force: true });
});

function validator(eventPolicy?: EventPolicy): TpmValidator {
  return new TpmValidator({
    variant: 'qemu-vtpm',
    measurements: expectedMeasurements(BOOT, MEASURED),
    ...(eventPolicy === undefined ? {} : { eventPolicy }),
  });
}

/** The node's document with `log` as its event log, validated; what the verifier answers. */
async function attest(log: Uint8Array | undefined, check = validator(), on = tpm) {
  const nonce = randomBytes(32);
  const document = await new TpmIssuer(on, { tcgEventLog: () => log }).issue(Buffer.alloc(32), nonce);
  return () => check.validate(document, nonce);
}

async function refusal(
  log: Uint8Array | undefined,
  reason: AttestationFailureReason,
  check = validator(),
  on = tpm,
): Promise<string> {
  const validate = await attest(log, check, on);
  let err: unknown;
  try {
    validate();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(AttestationError);
  expect((err as AttestationError).reason).toBe(reason);
  return (err as AttestationError).message;
}

/** The genuine log with one event's SHA-256 digest replaced (events: 0 header, 1 kernel, 2 bootstrapper). */
function withDigest(log: Buffer, index: number, digest: Buffer): Buffer {
  const event = parseEventLog(log).events[index]!;
  const copy = Buffer.from(log);
  // TCG_PCR_EVENT2: pcr, type, count (12 bytes), then algorithm id (2 bytes) and the digest.
  digest.copy(copy, event.offset + 12 + 2);
  return copy;
}

describe('the event log must replay to the quote before anything else is compared', () => {
  it('accepts the genuine log and hands it to the caller', async () => {
    const result = (await attest(genuineLog))();
    expect(result.eventLog?.events.map((e) => [e.pcr, e.typeName])).toEqual([
      [0, 'EV_NO_ACTION'],
      [4, 'EV_EFI_BOOT_SERVICES_APPLICATION'],
      [9, 'EV_IPL'],
    ]);
  });

  it('refuses a log edited to explain a different bootstrapper: the replay names the PCR', async () => {
    const other = componentDigest('bootstrapper.mjs v2 (the one the policy allows)');
    const message = await refusal(withDigest(genuineLog, 2, other), 'event-log');
    expect(message).toMatch(
      /^event log does not replay to the quoted PCR 9: its event gives [0-9a-f]{64}, the quote says [0-9a-f]{64}/,
    );
  });

  it('refuses a log with an event removed, also when it was the only event of its PCR', async () => {
    const events = parseEventLog(genuineLog).events;
    const removed = genuineLog.subarray(0, events[2]!.offset);
    expect(await refusal(removed, 'event-log')).toBe(
      `event log does not replay to the quoted PCR 9: the log has no event for it, the quote says ${expectedMeasurements(BOOT, [9]).get(9)!.expected.toString('hex')}, not its reset value (events removed)`,
    );
  });

  it("refuses another machine's log (a real RHEL host's), naming the first PCR it does not explain", async () => {
    expect(await refusal(await readFile(REAL_LOG), 'event-log')).toMatch(
      /^event log does not replay to the quoted PCR 0: its \d+ events give/,
    );
  });

  it('refuses a truncated log, naming where it ends', async () => {
    expect(await refusal(genuineLog.subarray(0, genuineLog.length - 5), 'event-log')).toMatch(
      /^the node's event log: event 2 at offset \d+: /,
    );
  });

  it('refuses an oversized log before parsing it', async () => {
    const writer = new EventLogWriter({ banks: ['sha256'], maxBytes: 2 * MAX_EVENT_LOG_BYTES });
    while (writer.byteLength <= MAX_EVENT_LOG_BYTES)
      writer.append({ pcr: 23, type: 'EV_IPL', data: Buffer.alloc(4000) });
    const huge = writer.bytes();
    // The document limit holds the log's: the verifier names the log's own limit.
    expect(await refusal(huge, 'event-log')).toBe(
      `event log of ${huge.length} bytes exceeds ${MAX_EVENT_LOG_BYTES} bytes (the limit of a document's log)`,
    );
  });

  it('refuses a log without a SHA-256 bank: it cannot be checked against the quote', async () => {
    expect(await refusal(await readFile(SHA1_LOG), 'event-log')).toMatch(
      /^the event log has no SHA-256 bank \(sha1 format, banks sha1\)/,
    );
  });

  it('compares PCRs without events as before, and explains a mismatching PCR with its events', async () => {
    const other = [BOOT[0]!, { ...BOOT[1]!, digest: componentDigest('bootstrapper.mjs v2') }];
    const check = new TpmValidator({ variant: 'qemu-vtpm', measurements: expectedMeasurements(other, MEASURED) });
    const message = await refusal(genuineLog, 'measurements', check);
    expect(message).toContain(
      `PCR 9: expected ${expectedMeasurements(other, [9]).get(9)!.expected.toString('hex')}, actual`,
    );
    expect(message).toContain(
      `; node measured: event 2 EV_IPL "bootstrapper bundle" (untrusted) (sha256:${BOOT[1]!.digest.toString('hex')})`,
    );
  });
});

describe('the policy on boot events', () => {
  it('refuses a node whose bootstrapper is not allowed, naming rule and event, before the PCR values', async () => {
    const policy = bootEventPolicy([BOOT[0]!, { ...BOOT[1]!, digest: componentDigest('bootstrapper.mjs v2') }]);
    expect(await refusal(genuineLog, 'event-policy', validator(policy))).toBe(
      `event policy not satisfied: EV_IPL digest sha256:${BOOT[1]!.digest.toString('hex')} is not allowed in PCR 9 (event 2, PCR 9) [rule pcrEventDigests]`,
    );
    expect((await attest(genuineLog, validator(bootEventPolicy(BOOT))))().eventLog).toBeDefined();
  });

  it('refuses a node that sends no log where a policy asks for one', async () => {
    expect(await refusal(undefined, 'event-policy', validator({ secureBoot: 'enabled' }))).toBe(
      "the event policy (secureBoot) needs the node's event log, and the node sent none",
    );
  });

  it('refuses a log whose events are in PCRs the quote does not cover', async () => {
    const nonce = randomBytes(32);
    const partial = new TpmIssuer(tpm, { tcgEventLog: () => genuineLog, pcrs: [0, 4, 15] });
    const document = await partial.issue(Buffer.alloc(32), nonce);
    const check = new TpmValidator({
      variant: 'qemu-vtpm',
      measurements: expectedMeasurements(BOOT, [4, 15]),
      eventPolicy: { bootApplications: [BOOT[0]!.digest.toString('hex')] },
    });
    expect(() => check.validate(document, nonce)).toThrow(
      'the event log extends PCR 9, which the quote does not cover: those events cannot be checked against the event policy',
    );
  });

  it('refuses Secure Boot off where the rule asks for it on (crafted log, matching PCRs), naming rule and event', async () => {
    const crafted = await startSwtpm();
    const other = new Tpm(new SocketTransport({ host: crafted.host, port: crafted.port, keepConnection: true }));
    try {
      await other.startup();
      // The firmware of a machine with Secure Boot off, and logs that claim `claim`.
      const measured = uefiVariableData(EFI_GLOBAL_VARIABLE_GUID, 'SecureBoot', Buffer.from([0]));
      const secureBootLog = (claim: number) => {
        const writer = new EventLogWriter({ banks: ['sha256'] });
        const variable = writer.append({
          pcr: 7,
          type: 'EV_EFI_VARIABLE_DRIVER_CONFIG',
          data: uefiVariableData(EFI_GLOBAL_VARIABLE_GUID, 'SecureBoot', Buffer.from([claim])),
          digests: { sha256: bankDigest('sha256', measured) },
        });
        const separator = writer.append({ pcr: 7, type: 'EV_SEPARATOR', data: separatorData() });
        return { bytes: writer.bytes(), extends: [variable, separator] };
      };
      for (const event of secureBootLog(0).extends) await other.pcrExtend(7, event.digests);
      const check = new TpmValidator({
        variant: 'qemu-vtpm',
        measurements: new Map([
          [7, { expected: Buffer.alloc(32), warnOnly: true }],
          [15, { expected: Buffer.alloc(32), warnOnly: false }],
        ]),
        eventPolicy: { secureBoot: 'enabled' },
      });
      // The honest log: its replay holds, and the rule names the event.
      expect(await refusal(secureBootLog(0).bytes, 'event-policy', check, other)).toBe(
        "event policy not satisfied: Secure Boot must be enabled: the SecureBoot variable measured before PCR 7's separator is disabled (event 1, PCR 7, labelled EV_EFI_VARIABLE_DRIVER_CONFIG) [rule secureBoot]",
      );
      // A log claiming Secure Boot on over the same digests: the replay holds, the claim is not believed.
      expect(await refusal(secureBootLog(1).bytes, 'event-policy', check, other)).toBe(
        "event policy not satisfied: Secure Boot must be enabled: PCR 7 event before its separator does not show what it measured (its data does not hash to its digest), so Secure Boot's state cannot be read (event 1, PCR 7, labelled EV_EFI_VARIABLE_DRIVER_CONFIG) [rule secureBoot]",
      );
    } finally {
      await other.close();
      await crafted.stop();
    }
  });
});
