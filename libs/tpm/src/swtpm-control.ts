import { connect } from 'node:net';
import { TpmTransportError } from './errors.js';
import type { SocketAddress } from './socket-transport.js';

/** swtpm control-channel commands (swtpm's `ptm` interface). */
const PTM = {
  INIT: 2,
  SHUTDOWN: 3,
  STOP: 14,
} as const;

/** Flag for PTM_INIT: drop volatile state, like a cold boot. */
const INIT_FLAG_DELETE_VOLATILE = 1;

/**
 * swtpm's control channel, over TCP or a unix domain socket. Used where a real machine would power-cycle: `reset` makes the
 * TPM behave as after a reboot (PCRs back to zero), which the rejoin path and `mini` need.
 */
export class SwtpmControl {
  private readonly address: SocketAddress;
  private readonly timeoutMs: number;
  private readonly where: string;

  /** `new SwtpmControl(host, port)` for TCP, `new SwtpmControl({ path })` for a unix socket. */
  constructor(address: SocketAddress, timeoutMs?: number);
  constructor(host: string, port: number, timeoutMs?: number);
  constructor(target: SocketAddress | string, portOrTimeout?: number, timeoutMs?: number) {
    if (typeof target === 'string') {
      if (portOrTimeout === undefined) throw new RangeError('SwtpmControl: a TCP host needs a port');
      this.address = { host: target, port: portOrTimeout };
      this.timeoutMs = timeoutMs ?? 10_000;
    } else {
      this.address = target;
      this.timeoutMs = portOrTimeout ?? 10_000;
    }
    this.where =
      this.address.path !== undefined
        ? `unix socket ${this.address.path}`
        : `${this.address.host}:${this.address.port}`;
  }

  /** Re-initialises the TPM as on power-on; it then needs TPM2_Startup (see Tpm.startup). */
  async reset(): Promise<void> {
    const payload = Buffer.alloc(4);
    payload.writeUInt32BE(INIT_FLAG_DELETE_VOLATILE);
    await this.command(PTM.INIT, payload, 'INIT');
  }

  /** Orderly TPM shutdown (the TPM stays powered). */
  async shutdown(): Promise<void> {
    await this.command(PTM.SHUTDOWN, Buffer.alloc(0), 'SHUTDOWN');
  }

  /** Stops the TPM; swtpm then accepts only INIT on the control channel. */
  async stop(): Promise<void> {
    await this.command(PTM.STOP, Buffer.alloc(0), 'STOP');
  }

  private command(code: number, payload: Buffer, name: string): Promise<void> {
    const request = Buffer.alloc(4 + payload.length);
    request.writeUInt32BE(code);
    payload.copy(request, 4);
    return new Promise((resolve, reject) => {
      const socket =
        this.address.path !== undefined
          ? connect({ path: this.address.path })
          : connect({ host: this.address.host, port: this.address.port });
      const fail = (message: string): void => {
        clearTimeout(timer);
        socket.destroy();
        reject(new TpmTransportError(`swtpm control ${this.where} ${name}: ${message}`));
      };
      const timer = setTimeout(() => {
        fail(`no answer within ${this.timeoutMs} ms`);
      }, this.timeoutMs);
      let received = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]);
        if (received.length < 4) return;
        const result = received.readUInt32BE(0);
        clearTimeout(timer);
        socket.destroy();
        if (result === 0) resolve();
        else reject(new TpmTransportError(`swtpm control ${name} failed with TPM result 0x${result.toString(16)}`));
      });
      socket.once('error', (err) => {
        fail(err.message);
      });
      socket.once('connect', () => socket.write(request));
    });
  }
}
