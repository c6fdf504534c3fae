import { connect } from 'node:net';
import type { Socket } from 'node:net';

/** A reply of QEMU's JSON protocols: a return value or an error with its class and text. */
export interface QemuReply {
  return?: unknown;
  error?: { class: string; desc: string };
  event?: string;
  QMP?: unknown;
}

export class QemuProtocolError extends Error {
  override readonly name = 'QemuProtocolError';
}

/**
 * A connection speaking QEMU's JSON protocols (QMP and the guest agent's): one JSON object a line
 * each way. Replies come in the order of the commands; QMP's asynchronous events are set aside.
 * Every wait is bounded; a reply larger than `maxLineBytes` ends the connection.
 */
export class JsonSocket {
  readonly #socket: Socket;
  readonly #what: string;
  #buffer = '';
  #waiters: { resolve: (reply: QemuReply) => void; reject: (error: Error) => void }[] = [];
  #queued: QemuReply[] = [];
  #closed: Error | undefined;
  /** Bytes to drop before the next line (the guest agent's 0xFF sync sentinel). */
  skipThrough: string | undefined;

  private constructor(socket: Socket, what: string, maxLineBytes: number) {
    this.#socket = socket;
    this.#what = what;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.#buffer += chunk;
      if (this.skipThrough !== undefined) {
        const at = this.#buffer.indexOf(this.skipThrough);
        if (at < 0) {
          this.#buffer = '';
          return;
        }
        this.#buffer = this.#buffer.slice(at + this.skipThrough.length);
        this.skipThrough = undefined;
      }
      for (let end = this.#buffer.indexOf('\n'); end >= 0; end = this.#buffer.indexOf('\n')) {
        // The guest agent puts 0xFF before each guest-sync-delimited reply, stale ones included.
        const line = this.#buffer
          .slice(0, end)
          .replace(/^\xff+/, '')
          .trim();
        this.#buffer = this.#buffer.slice(end + 1);
        if (line !== '') this.#deliver(line);
      }
      if (this.#buffer.length > maxLineBytes)
        this.#fail(new QemuProtocolError(`${what} sent a line over ${maxLineBytes} bytes`));
    });
    socket.on('error', (error) => {
      this.#fail(new QemuProtocolError(`${what}: ${error.message}`));
    });
    socket.on('close', () => {
      this.#fail(new QemuProtocolError(`${what} closed the connection`));
    });
  }

  static async connect(path: string, what: string, timeoutMs: number, maxLineBytes = 64 << 20): Promise<JsonSocket> {
    const socket = connect(path);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new QemuProtocolError(`${what} (${path}) did not accept a connection within ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve();
      });
      socket.once('error', (error) => {
        clearTimeout(timer);
        reject(new QemuProtocolError(`${what} (${path}): ${error.message}`));
      });
    });
    return new JsonSocket(socket, what, maxLineBytes);
  }

  #deliver(line: string): void {
    let reply: QemuReply;
    try {
      reply = JSON.parse(Buffer.from(line, 'latin1').toString('utf8')) as QemuReply;
    } catch {
      this.#fail(new QemuProtocolError(`${this.#what} sent a line that is not JSON: ${line.slice(0, 200)}`));
      return;
    }
    if (reply.event !== undefined) return;
    const waiter = this.#waiters.shift();
    if (waiter === undefined) this.#queued.push(reply);
    else waiter.resolve(reply);
  }

  #fail(error: Error): void {
    if (this.#closed !== undefined) return;
    this.#closed = error;
    for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
    this.#socket.destroy();
  }

  /** The next reply (or greeting), bounded in time. */
  next(timeoutMs: number): Promise<QemuReply> {
    const queued = this.#queued.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.#closed !== undefined) return Promise.reject(this.#closed);
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: (reply: QemuReply) => {
          clearTimeout(timer);
          resolve(reply);
        },
        reject: (error: Error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        reject(new QemuProtocolError(`${this.#what} did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }

  /** Sends a command and returns its reply's value; an error reply is thrown with QEMU's words. */
  async execute(command: string, args: Record<string, unknown> | undefined, timeoutMs: number): Promise<unknown> {
    this.send({ execute: command, ...(args === undefined ? {} : { arguments: args }) });
    const reply = await this.next(timeoutMs);
    if (reply.error !== undefined)
      throw new QemuProtocolError(`${this.#what}: ${command}: ${reply.error.desc} (${reply.error.class})`);
    return reply.return;
  }

  send(message: unknown): void {
    if (this.#closed !== undefined) throw this.#closed;
    this.#socket.write(`${JSON.stringify(message)}\n`);
  }

  /** Writes raw bytes (the guest agent's sync sentinel). */
  sendRaw(bytes: Uint8Array): void {
    this.#socket.write(bytes);
  }

  close(): void {
    this.#socket.destroy();
  }
}
