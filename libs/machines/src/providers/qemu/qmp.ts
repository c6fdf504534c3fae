import { JsonSocket } from './json-socket.js';

/** QEMU's machine protocol (QMP) on the VM's monitor socket: power and state. */
export class Qmp {
  readonly #connection: JsonSocket;

  private constructor(connection: JsonSocket) {
    this.#connection = connection;
  }

  /** Connects, reads QEMU's greeting and leaves capabilities negotiation, as QMP requires. */
  static async connect(path: string, timeoutMs = 10_000): Promise<Qmp> {
    const connection = await JsonSocket.connect(path, "QEMU's monitor (QMP)", timeoutMs);
    try {
      const greeting = await connection.next(timeoutMs);
      if (greeting.QMP === undefined) throw new Error(`QEMU's monitor greeted with ${JSON.stringify(greeting)}`);
      await connection.execute('qmp_capabilities', undefined, timeoutMs);
    } catch (error) {
      connection.close();
      throw error;
    }
    return new Qmp(connection);
  }

  /** running, paused, shutdown, internal-error (a KVM failure pauses the VM with it), … */
  async status(): Promise<string> {
    const reply = (await this.#connection.execute('query-status', undefined, 5_000)) as { status: string };
    return reply.status;
  }

  /** The ACPI power button: the guest's OS shuts down cleanly (if it listens). */
  async powerButton(): Promise<void> {
    await this.#connection.execute('system_powerdown', undefined, 5_000);
  }

  /** Power cut: QEMU ends at once. */
  async quit(): Promise<void> {
    await this.#connection.execute('quit', undefined, 5_000).catch(() => undefined);
  }

  close(): void {
    this.#connection.close();
  }
}
