import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Whose TPM work this is. The node's own attestations (init, join, rejoin) are `foreground`;
 * work done for remote callers (an aTLS handshake, a credential activation for a client) runs as
 * `background`, so however many strangers queue up, the node's own quote waits for at most the
 * sequence that is running.
 */
export type TpmPriority = 'foreground' | 'background';

const current = new AsyncLocalStorage<TpmPriority>();

/** Runs `work` (and everything it awaits) with TPM sequences of the given priority. */
export function withTpmPriority<T>(priority: TpmPriority, work: () => T): T {
  return current.run(priority, work);
}

/** Serialises TPM sequences, one at a time, foreground ones first. */
export class PrioritySerialQueue {
  private readonly lanes: Record<TpmPriority, (() => void)[]> = { foreground: [], background: [] };
  private running = false;

  /** Waiting background sequences; a caller can refuse new work when this grows. */
  get backgroundWaiting(): number {
    return this.lanes.background.length;
  }

  run<T>(task: () => Promise<T>): Promise<T> {
    const lane = this.lanes[current.getStore() ?? 'foreground'];
    return new Promise<T>((resolve, reject) => {
      lane.push(() => {
        // Through a promise, so a task that throws synchronously cannot leave the queue stuck.
        Promise.resolve()
          .then(task)
          .then(resolve, reject)
          .finally(() => {
            this.running = false;
            this.next();
          });
      });
      this.next();
    });
  }

  private next(): void {
    if (this.running) return;
    const job = this.lanes.foreground.shift() ?? this.lanes.background.shift();
    if (job === undefined) return;
    this.running = true;
    job();
  }
}
