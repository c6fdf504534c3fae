import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { MAX_TPM_MESSAGE_BYTES } from './constants.js';
import { TpmTransportError } from './errors.js';
import { SerialQueue } from './transport.js';
import type { TpmTransport } from './transport.js';

/** Where swtpm serves its command channel: TCP host and port, or a unix domain socket path. */
export type SocketAddress = { host: string; port: number; path?: never } | { path: string; host?: never; port?: never };

interface ConnectionOptions {
  /** Bound for one command round trip, including connecting. */
  timeoutMs?: number;
  /**
   * Keep one connection open across commands. swtpm serves a single connection at a time, so
   * the default (connect per command) lets other programs, such as tpm2-tools, share the TPM;
   * keeping the connection saves a loopback connect per command in hot loops.
   */
  keepConnection?: boolean;
}

export type SocketTransportOptions = SocketAddress & ConnectionOptions;

/**
 * swtpm's command channel over TCP or a unix domain socket (`--server type=unixio`, which only
 * local users with access to the socket file can reach): raw TPM 2.0 commands and responses
 * with no framing. swtpm has no resource manager, so callers flush transient
 * handles themselves (Tpm does).
 */
export class SocketTransport implements TpmTransport {
  readonly description: string;
  private readonly address: SocketAddress;
  private readonly timeoutMs: number;
  private readonly keepConnection: boolean;
  private readonly queue = new SerialQueue();
  private socket: Socket | undefined;
  private closed = false;

  constructor(options: SocketTransportOptions) {
    this.address = options.path !== undefined ? { path: options.path } : { host: options.host, port: options.port };
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.keepConnection = options.keepConnection ?? false;
    this.description =
      options.path !== undefined ? `swtpm at unix socket ${options.path}` : `swtpm at ${options.host}:${options.port}`;
  }

  send(command: Buffer): Promise<Buffer> {
    return this.queue.run(() => this.roundTrip(command));
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.queue.run(() => {
      this.socket?.destroy();
      this.socket = undefined;
      return Promise.resolve();
    });
  }

  private async connected(): Promise<Socket> {
    if (this.closed) throw new TpmTransportError(`${this.description}: transport is closed`);
    if (this.socket !== undefined && !this.socket.destroyed) return this.socket;
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s =
        this.address.path !== undefined
          ? connect({ path: this.address.path })
          : connect({ host: this.address.host, port: this.address.port });
      const timer = setTimeout(() => {
        s.destroy();
        reject(new TpmTransportError(`${this.description}: connect timed out after ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      s.once('connect', () => {
        clearTimeout(timer);
        resolve(s);
      });
      s.once('error', (err) => {
        clearTimeout(timer);
        reject(new TpmTransportError(`${this.description}: ${err.message}`, { cause: err }));
      });
    });
    if (this.address.path === undefined) socket.setNoDelay(true);
    socket.on('error', () => {
      // Reported to the pending command through 'close'; the next command reconnects.
    });
    this.socket = socket;
    return socket;
  }

  private async roundTrip(command: Buffer): Promise<Buffer> {
    const socket = await this.connected();
    try {
      return await this.exchange(socket, command);
    } finally {
      if (!this.keepConnection) {
        socket.destroy();
        this.socket = undefined;
      }
    }
  }

  private exchange(socket: Socket, command: Buffer): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let received = 0;
      const finish = (err: Error | undefined, response?: Buffer): void => {
        clearTimeout(timer);
        socket.off('data', onData);
        socket.off('close', onClose);
        if (err !== undefined) {
          socket.destroy();
          reject(err);
        } else if (response !== undefined) {
          resolve(response);
        }
      };
      const onData = (chunk: Buffer): void => {
        chunks.push(chunk);
        received += chunk.length;
        if (received < 10) return;
        const all = Buffer.concat(chunks, received);
        const size = all.readUInt32BE(2);
        if (size < 10 || size > MAX_TPM_MESSAGE_BYTES) {
          finish(new TpmTransportError(`${this.description}: response header claims ${size} bytes`));
        } else if (received > size) {
          finish(new TpmTransportError(`${this.description}: ${received - size} bytes beyond the response`));
        } else if (received === size) {
          finish(undefined, all);
        }
      };
      const onClose = (): void => {
        finish(new TpmTransportError(`${this.description}: connection closed during a command`));
      };
      const timer = setTimeout(() => {
        finish(new TpmTransportError(`${this.description}: no response within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      socket.on('data', onData);
      socket.once('close', onClose);
      socket.write(command);
    });
  }
}
