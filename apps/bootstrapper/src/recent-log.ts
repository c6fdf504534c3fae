import { Writable } from 'node:stream';

/**
 * Keeps the most recent log output in memory (a byte budget, oldest lines dropped first), so a
 * failed Init can send the node's logs to the CLI without journald.
 */
export class RecentLog extends Writable {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private readonly budget: number;

  constructor(budgetBytes = 512 * 1024) {
    super();
    this.budget = budgetBytes;
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.append(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    done();
  }

  /** Adds raw output (for example kubeadm's) to the log. */
  append(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.budget && this.chunks.length > 1) this.size -= this.chunks.shift()?.length ?? 0;
  }

  snapshot(): Buffer {
    return Buffer.concat(this.chunks);
  }
}
