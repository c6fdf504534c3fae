import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmod, mkdir, open, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';
import { errorMessage } from '@constellation/errors';
import { withUnixSocketPath } from '@constellation/files';
import { expandCommandLine, parseEnvironmentFile } from './unit.js';
import type { UnitSpec, UnitsFile } from './unit.js';

/** A request of the node's `systemctl`, and the runner's answer. */
export interface UnitRequest {
  verb: 'start' | 'stop' | 'restart' | 'status' | 'enable' | 'is-enabled';
  unit: string;
}
export interface UnitAnswer {
  ok: boolean;
  /** active, inactive, activating (waiting to restart) or failed. */
  state?: string;
  enabled?: boolean;
  message?: string;
}

const STOP_GRACE_MS = 10_000;

interface Running {
  spec: UnitSpec;
  child?: ChildProcess | undefined;
  state: 'active' | 'inactive' | 'activating' | 'failed';
  /** Set while a stop was asked for: the exit is not a failure and starts nothing again. */
  stopping: boolean;
  restartTimer?: NodeJS.Timeout | undefined;
  enabled: boolean;
  lastExit?: string;
}

/**
 * Plays systemd's part on a node: starts the units marked for boot in order, starts, stops and
 * restarts units on request from the node's `systemctl` (kubeadm restarts the kubelet this way),
 * restarts them after they exit as their policy says, and stops them all in reverse order on
 * SIGTERM (the node's shutdown).
 */
export class UnitRunner {
  private readonly units = new Map<string, Running>();
  private readonly started: string[] = [];
  private server?: Server;

  constructor(private readonly file: UnitsFile) {
    for (const spec of file.units)
      this.units.set(spec.name, { spec, state: 'inactive', stopping: false, enabled: spec.startAtBoot });
  }

  async boot(): Promise<void> {
    await mkdir(this.file.logs, { recursive: true });
    await this.listen();
    for (const unit of this.units.values()) {
      if (unit.spec.startAtBoot) await this.start(unit);
    }
  }

  async answer(request: UnitRequest): Promise<UnitAnswer> {
    const unit = this.units.get(request.unit.replace(/\.service$/, ''));
    if (unit === undefined) return { ok: false, message: `Unit ${request.unit} could not be found.` };
    switch (request.verb) {
      case 'start':
        return this.start(unit);
      case 'stop':
        await this.stop(unit);
        return { ok: true, state: unit.state };
      case 'restart':
        await this.stop(unit);
        return this.start(unit);
      case 'enable':
        unit.enabled = true;
        return { ok: true, enabled: true };
      case 'is-enabled':
        return { ok: true, enabled: unit.enabled };
      case 'status':
        return {
          ok: true,
          state: unit.state,
          enabled: unit.enabled,
          ...(unit.lastExit === undefined ? {} : { message: unit.lastExit }),
        };
    }
  }

  /** Stops every unit, last started first, then the control socket. */
  async shutdown(): Promise<void> {
    for (const name of [...this.started].reverse()) {
      const unit = this.units.get(name);
      if (unit !== undefined) await this.stop(unit);
    }
    await new Promise<void>((resolve) => {
      if (this.server === undefined) resolve();
      else
        this.server.close(() => {
          resolve();
        });
    });
    await rm(this.file.socket, { force: true });
  }

  private async start(unit: Running): Promise<UnitAnswer> {
    if (unit.child !== undefined) return { ok: true, state: unit.state };
    clearTimeout(unit.restartTimer);
    const condition = unit.spec.conditionPathExists;
    if (condition !== undefined && !existsSync(condition)) {
      unit.state = 'inactive';
      return { ok: true, state: 'inactive', message: `condition not met: ${condition} does not exist` };
    }
    let env: Record<string, string>;
    try {
      env = await this.environment(unit.spec);
    } catch (err) {
      unit.state = 'failed';
      return { ok: false, state: 'failed', message: errorMessage(err) };
    }
    const [program, ...args] = expandCommandLine(unit.spec.exec, env);
    if (program === undefined) return { ok: false, message: `unit ${unit.spec.name} has no command` };
    const log = await open(join(this.file.logs, `${unit.spec.name}.log`), 'a', 0o600);
    try {
      const child = spawn(program, args, { env, stdio: ['ignore', log.fd, log.fd] });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
      unit.child = child;
      unit.state = 'active';
      unit.stopping = false;
      if (!this.started.includes(unit.spec.name)) this.started.push(unit.spec.name);
      child.once('exit', (code, signal) => {
        this.exited(unit, code, signal);
      });
      return { ok: true, state: 'active' };
    } catch (err) {
      unit.state = 'failed';
      return { ok: false, state: 'failed', message: `cannot start ${program}: ${errorMessage(err)}` };
    } finally {
      await log.close();
    }
  }

  private exited(unit: Running, code: number | null, signal: NodeJS.Signals | null): void {
    unit.child = undefined;
    unit.lastExit = signal === null ? `exited with code ${code ?? '?'}` : `killed by ${signal}`;
    const failed = !(code === 0 && signal === null);
    if (unit.stopping) {
      unit.state = 'inactive';
      return;
    }
    const again = unit.spec.restart === 'always' || (unit.spec.restart === 'on-failure' && failed);
    unit.state = again ? 'activating' : failed ? 'failed' : 'inactive';
    if (!again) return;
    unit.restartTimer = setTimeout(() => {
      void this.start(unit);
    }, unit.spec.restartDelayMs);
  }

  private async stop(unit: Running): Promise<void> {
    clearTimeout(unit.restartTimer);
    const child = unit.child;
    unit.stopping = true;
    if (child === undefined) {
      unit.state = 'inactive';
      return;
    }
    const gone = new Promise<void>((resolve) =>
      child.once('exit', () => {
        resolve();
      }),
    );
    child.kill('SIGTERM');
    const killed = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await gone;
    clearTimeout(killed);
  }

  private async environment(spec: UnitSpec): Promise<Record<string, string>> {
    const env: Record<string, string> = { ...this.file.env, ...spec.env };
    for (const file of spec.environmentFiles ?? []) {
      const text = await readFile(file.path, 'utf8').catch((err: unknown) => {
        if (file.required) throw new Error(`environment file ${file.path}: ${errorMessage(err)}`);
        return '';
      });
      Object.assign(env, parseEnvironmentFile(text));
    }
    return env;
  }

  private async listen(): Promise<void> {
    await mkdir(dirname(this.file.socket), { recursive: true });
    await rm(this.file.socket, { force: true });
    this.server = createServer((socket) => {
      this.serve(socket);
    });
    const server = this.server;
    await withUnixSocketPath(
      this.file.socket,
      (path) =>
        new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(path, resolve);
        }),
    );
    await chmod(this.file.socket, 0o600);
  }

  private serve(socket: Socket): void {
    let buffered = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      if (buffered.length > 4096) socket.destroy();
      const end = buffered.indexOf('\n');
      if (end < 0) return;
      const line = buffered.slice(0, end);
      void this.handle(line).then((answer) => socket.end(`${JSON.stringify(answer)}\n`));
    });
    socket.on('error', () => undefined);
  }

  private async handle(line: string): Promise<UnitAnswer> {
    try {
      const request = JSON.parse(line) as UnitRequest;
      return await this.answer(request);
    } catch (err) {
      return { ok: false, message: `bad request: ${errorMessage(err)}` };
    }
  }
}

/** The runner's process: boots the node's units and stops them on SIGTERM or SIGINT. */
export async function runUnits(unitsFile: string): Promise<void> {
  const file = JSON.parse(await readFile(unitsFile, 'utf8')) as UnitsFile;
  const runner = new UnitRunner(file);
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    void runner.shutdown().finally(() => process.exit(0));
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  await runner.boot();
}
