// Test fixture: the Refusal a call must end with, for tests that go on to check its kind, reason
// and message.
import { Refusal } from '@constellation/errors';

/** Awaits `call`, which must reject with a Refusal, and returns that refusal. */
export async function refusalOf(call: Promise<unknown>): Promise<Refusal> {
  const outcome = await call.then(
    () => new Error('the call succeeded; a refusal was expected'),
    (err: unknown) => err,
  );
  if (outcome instanceof Refusal) return outcome;
  throw outcome instanceof Error ? outcome : new Error(`expected a Refusal, got ${String(outcome)}`);
}
