import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventLogError } from './errors.js';
import { describeEventData } from './event-data.js';
import { checkEventPolicy, eventPolicyFromLog } from './event-policy.js';
import { EventLogWriter } from './event-log-writer.js';
import { EVENT_TYPES } from './event-types.js';
import { parseEventLog } from './parse-event-log.js';
import { pcrBanksToJson, replayEventLog } from './replay.js';
import { realLogs } from './testdata.fixture.js';

// Property-based fuzzing with fast-check (fixed seeds, bounded runs, so a failure reproduces):
// real logs and written ones, mutated where the structure is (sizes, counts, algorithm IDs, types),
// must either parse or be refused with EventLogError; a parsed log must replay, decode and be
// checked against a policy without throwing. Never a TypeError/RangeError from deep inside.

type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'delete'; at: number; count: number }
  | { kind: 'set16'; at: number; value: number }
  | { kind: 'set32'; at: number; value: number };

const interesting32 = fc.oneof(
  fc.constantFrom(0, 1, 3, 4, 8, 13, 20, 23, 24, 0x7f, 0x100, 0xffff, 0x80000001, 0x80000003, 0x7fffffff, 0xffffffff),
  fc.integer({ min: 0, max: 0xffffffff }),
);
const interesting16 = fc.oneof(
  fc.constantFrom(0, 4, 0x0b, 0x0c, 0x0d, 0x12, 20, 32, 48, 0xffff),
  fc.integer({ min: 0, max: 0xffff }),
);

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }),
  }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 16 }) }),
  fc.record({ kind: fc.constant('set16' as const), at: fc.nat(), value: interesting16 }),
  fc.record({ kind: fc.constant('set32' as const), at: fc.nat(), value: interesting32 }),
);

/** Positions wrap around the input, so every mutation applies to every input. */
function mutate(input: Buffer, m: Mutation): Buffer {
  if (input.length < 4) return input;
  const at = m.at % (input.length - 3);
  const out = Buffer.from(input);
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
    case 'set16':
      out.writeUInt16LE(m.value, at);
      return out;
    case 'set32':
      out.writeUInt32LE(m.value, at);
      return out;
  }
}

/** Parse, replay, decode, check a policy: typed refusal or a result, nothing else. */
function exercise(input: Buffer): 'parsed' | 'refused' {
  let log;
  try {
    log = parseEventLog(input);
  } catch (err) {
    if (err instanceof EventLogError) return 'refused';
    throw new Error(`untyped failure for ${input.subarray(0, 64).toString('hex')}…`, { cause: err });
  }
  pcrBanksToJson(replayEventLog(log));
  for (const event of log.events) describeEventData(event);
  checkEventPolicy(log, { secureBoot: 'enabled', kernelCommandLines: ['x'], bootApplications: ['0'.repeat(64)] });
  eventPolicyFromLog(log);
  return 'parsed';
}

const logs = await realLogs();

function writtenLog(events: { pcr: number; type: number; data: Uint8Array }[]): Buffer {
  const writer = new EventLogWriter({ banks: ['sha1', 'sha256', 'sha384'], startupLocality: 3 });
  for (const event of events) {
    if (event.type === EVENT_TYPES.EV_SEPARATOR || event.type === EVENT_TYPES.EV_NO_ACTION) continue;
    writer.append(event);
  }
  return writer.bytes();
}

describe('event log parser under fuzzing', () => {
  it('mutated real logs of both formats parse or are refused with EventLogError', () => {
    const outcomes = { parsed: 0, refused: 0 };
    fc.assert(
      fc.property(
        fc.nat({ max: logs.length - 1 }),
        fc.array(mutationArb, { minLength: 1, maxLength: 4 }),
        (which, mutations) => {
          const input = mutations.reduce((bytes, m) => mutate(bytes, m), logs[which]!.bytes);
          outcomes[exercise(input)]++;
        },
      ),
      { seed: 0xe7e41, numRuns: 1500 },
    );
    // Both outcomes occur: the mutations reach past the first check.
    expect(outcomes.parsed).toBeGreaterThan(50);
    expect(outcomes.refused).toBeGreaterThan(50);
  });

  it('written logs with arbitrary events and event data round-trip, and survive mutation', () => {
    const eventArb = fc.record({
      pcr: fc.integer({ min: 0, max: 23 }),
      type: fc.oneof(fc.constantFrom(...Object.values(EVENT_TYPES)), fc.integer({ min: 0, max: 0xffffffff })),
      data: fc.uint8Array({ maxLength: 96 }),
    });
    fc.assert(
      fc.property(
        fc.array(eventArb, { maxLength: 12 }),
        fc.array(mutationArb, { maxLength: 3 }),
        (events, mutations) => {
          const bytes = writtenLog(events);
          expect(exercise(bytes)).toBe('parsed');
          exercise(mutations.reduce((b, m) => mutate(b, m), bytes));
        },
      ),
      { seed: 0xe7e42, numRuns: 800 },
    );
  });

  it('random bytes are refused or parsed, never crash', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), (bytes) => {
        exercise(Buffer.from(bytes));
      }),
      { seed: 0xe7e43, numRuns: 2000 },
    );
  });
});
