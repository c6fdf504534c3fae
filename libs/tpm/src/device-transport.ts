import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { MAX_TPM_MESSAGE_BYTES } from './constants.js';
import { TpmTransportError } from './errors.js';
import { SerialQueue } from './transport.js';
import type { TpmTransport } from './transport.js';

/**
 * The kernel's TPM character device, normally the resource manager `/dev/tpmrm0`: one write
 * per command, one read returns the whole response. The resource manager flushes transient
 * objects when the file is closed.
 */
export class DeviceTransport implements TpmTransport {
  readonly description: string;
  private readonly path: string;
  private readonly queue = new SerialQueue();
  private handle: FileHandle | undefined;

  constructor(path = '/dev/tpmrm0') {
    this.path = path;
    this.description = `TPM device ${path}`;
  }

  send(command: Buffer): Promise<Buffer> {
    return this.queue.run(async () => {
      try {
        this.handle ??= await open(this.path, 'r+');
        await this.handle.write(command, 0, command.length, null);
        const buffer = Buffer.alloc(MAX_TPM_MESSAGE_BYTES);
        const { bytesRead } = await this.handle.read(buffer, 0, buffer.length, null);
        return buffer.subarray(0, bytesRead);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        throw new TpmTransportError(`${this.description}: ${message}`, { cause: err });
      }
    });
  }

  close(): Promise<void> {
    return this.queue.run(async () => {
      await this.handle?.close();
      this.handle = undefined;
    });
  }
}
