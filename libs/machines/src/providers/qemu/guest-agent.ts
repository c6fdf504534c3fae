import { randomInt } from 'node:crypto';
import type { ExecResult } from '../../machine.js';
import { JsonSocket, QemuProtocolError } from './json-socket.js';

/** How much of a file the agent moves per call (base64 in JSON over the virtio serial port). */
const CHUNK_BYTES = 1 << 20;

interface ExecStatus {
  exited: boolean;
  exitcode?: number;
  signal?: number;
  'out-data'?: string;
  'err-data'?: string;
  'out-truncated'?: boolean;
}

/**
 * The QEMU guest agent (qemu-guest-agent in the node image, on a virtio serial port): programs
 * run and files read and written in the guest, without a network or a shell login. Commands go
 * one at a time; a connection starts with guest-sync-delimited, which discards what an earlier
 * client left unread.
 */
export class GuestAgent {
  readonly #connection: JsonSocket;
  readonly #vm: string;

  private constructor(connection: JsonSocket, vm: string) {
    this.#connection = connection;
    this.#vm = vm;
  }

  static async connect(path: string, vm: string, timeoutMs: number): Promise<GuestAgent> {
    const connection = await JsonSocket.connect(path, `${vm}'s guest agent`, timeoutMs);
    try {
      const id = randomInt(1, 2 ** 31);
      // The agent answers sync-delimited with 0xFF first: what precedes it is stale.
      connection.skipThrough = '\xff';
      connection.sendRaw(Uint8Array.of(0xff));
      connection.send({ execute: 'guest-sync-delimited', arguments: { id } });
      // Replies before ours answer commands of earlier clients that the agent read only now (sent
      // while the guest was still booting, say): stale, skipped. Ours is the last command sent.
      const deadline = Date.now() + timeoutMs;
      let reply = await connection.next(timeoutMs);
      while (reply.return !== id) reply = await connection.next(Math.max(1, deadline - Date.now()));
    } catch (error) {
      connection.close();
      throw error;
    }
    return new GuestAgent(connection, vm);
  }

  /** Runs a program in the guest and waits for it, bounded; fails on a non-zero exit with its stderr. */
  async exec(command: readonly string[], env: readonly string[], timeoutMs: number): Promise<ExecResult> {
    const [path, ...args] = command;
    if (path === undefined) throw new RangeError('exec: empty command');
    const started = (await this.#connection.execute(
      'guest-exec',
      { path, arg: args, env: [...env], 'capture-output': true },
      10_000,
    )) as { pid: number };
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = (await this.#connection.execute('guest-exec-status', { pid: started.pid }, 10_000)) as ExecStatus;
      if (status.exited) {
        const stdout = Buffer.from(status['out-data'] ?? '', 'base64').toString('utf8');
        const stderr = Buffer.from(status['err-data'] ?? '', 'base64').toString('utf8');
        if (status.exitcode !== 0)
          throw new Error(
            `${command.join(' ')} on ${this.#vm} ${status.signal === undefined ? `exited with ${String(status.exitcode)}` : `was killed by signal ${status.signal}`}: ${stderr.trim() || stdout.trim()}`,
          );
        return { stdout, stderr };
      }
      if (Date.now() > deadline)
        throw new Error(`${command.join(' ')} on ${this.#vm} did not finish within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async readFile(path: string): Promise<Buffer | undefined> {
    let handle: number;
    try {
      handle = (await this.#connection.execute('guest-file-open', { path, mode: 'r' }, 10_000)) as number;
    } catch (error) {
      if (error instanceof QemuProtocolError && /No such file/i.test(error.message)) return undefined;
      throw error;
    }
    try {
      const chunks: Buffer[] = [];
      for (;;) {
        const read = (await this.#connection.execute('guest-file-read', { handle, count: CHUNK_BYTES }, 30_000)) as {
          'buf-b64': string;
          eof: boolean;
        };
        chunks.push(Buffer.from(read['buf-b64'], 'base64'));
        if (read.eof) return Buffer.concat(chunks);
      }
    } finally {
      await this.#connection.execute('guest-file-close', { handle }, 10_000);
    }
  }

  async writeFile(path: string, data: Uint8Array): Promise<void> {
    const handle = (await this.#connection.execute('guest-file-open', { path, mode: 'w' }, 10_000)) as number;
    try {
      for (let offset = 0; offset < data.length || offset === 0; offset += CHUNK_BYTES) {
        const chunk = Buffer.from(data.subarray(offset, offset + CHUNK_BYTES)).toString('base64');
        await this.#connection.execute('guest-file-write', { handle, 'buf-b64': chunk }, 30_000);
        if (data.length === 0) break;
      }
    } finally {
      await this.#connection.execute('guest-file-close', { handle }, 10_000);
    }
  }

  close(): void {
    this.#connection.close();
  }
}
