/** Carries raw TPM 2.0 command bytes to a TPM and its raw response back. */
export interface TpmTransport {
  /** Sends one command and resolves with the complete response. Calls are serialised. */
  send(command: Buffer): Promise<Buffer>;
  close(): Promise<void>;
  /** Where the TPM is, for log lines and errors (never a secret). */
  readonly description: string;
}

/** Serialises async work: each task starts after the previous one settled. */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task, task);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
