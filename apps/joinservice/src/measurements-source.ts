import { createHash } from 'node:crypto';
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { parseAttestationFile } from '@constellation/attestation';
import type { EventPolicy, Measurements } from '@constellation/attestation';
import type { Logger } from '@constellation/logger';

export interface MeasurementsSourceOptions {
  /** The attestation config file (`{"measurements": {...}, "eventPolicy": {...}}`, JSON or YAML; eventPolicy optional). */
  path: string;
  logger: Logger;
  /** Called after every successful load with the new generation. */
  onLoaded?: (generation: number) => void;
  /** Called when a changed file cannot be loaded (the last good measurements stay). */
  onFailed?: (error: Error) => void;
  /** Safety-net poll interval; watch events can be missed on some file systems. */
  pollIntervalMs?: number;
}

/**
 * The measurements and the event policy currently in force, reloaded together when their file changes. The directory is
 * watched rather than the file, because ConfigMap volumes replace files by swapping a `..data`
 * symlink; the content hash decides whether anything changed. A file that does not parse is
 * logged and counted and the last good measurements stay in force.
 */
export class MeasurementsSource {
  private measurements: Measurements = new Map();
  private eventPolicy: EventPolicy | undefined;
  private hash = '';
  private failedHash = '';
  private generation = 0;
  private watcher: FSWatcher | undefined;
  private poller: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private reloading: Promise<void> = Promise.resolve();
  private readonly options: MeasurementsSourceOptions;

  constructor(options: MeasurementsSourceOptions) {
    this.options = options;
  }

  /** Loads the file (it must be valid) and starts watching it. */
  async start(): Promise<void> {
    const text = await readFile(this.options.path, 'utf8');
    this.apply(text);
    this.watcher = watch(dirname(this.options.path), { persistent: false }, (_event, name) => {
      if (name === null || name === basename(this.options.path) || name.startsWith('..')) this.schedule();
    });
    this.watcher.on('error', (err) => {
      this.options.logger.warn('measurements directory watch failed; polling continues', { error: err.message });
    });
    this.poller = setInterval(() => {
      this.schedule();
    }, this.options.pollIntervalMs ?? 5_000);
    this.poller.unref();
  }

  stop(): void {
    this.watcher?.close();
    clearInterval(this.poller);
    clearTimeout(this.debounce);
  }

  current(): Measurements {
    return this.measurements;
  }

  /** The rules on boot events loaded with the measurements; undefined: none. */
  currentEventPolicy(): EventPolicy | undefined {
    return this.eventPolicy;
  }

  get loadedGeneration(): number {
    return this.generation;
  }

  /** Re-reads the file now; resolves once done (for tests and for SIGHUP). */
  reload(): Promise<void> {
    this.reloading = this.reloading.then(async () => {
      let text: string;
      try {
        text = await readFile(this.options.path, 'utf8');
      } catch (err) {
        this.fail(err as Error);
        return;
      }
      const hash = createHash('sha256').update(text).digest('hex');
      if (hash === this.failedHash) return; // already reported; wait for the next change
      try {
        this.apply(text);
      } catch (err) {
        this.failedHash = hash;
        this.fail(err as Error);
      }
    });
    return this.reloading;
  }

  private schedule(): void {
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      void this.reload();
    }, 50);
  }

  private apply(text: string): void {
    const hash = createHash('sha256').update(text).digest('hex');
    if (hash === this.hash) return;
    const parsed = parseAttestationFile(text, this.options.path);
    this.measurements = parsed.measurements;
    this.eventPolicy = parsed.eventPolicy;
    this.hash = hash;
    this.generation++;
    this.options.logger.info('measurements loaded', {
      generation: this.generation,
      pcrs: [...parsed.measurements.keys()],
      eventRules: Object.keys(parsed.eventPolicy ?? {}),
    });
    this.options.onLoaded?.(this.generation);
  }

  private fail(error: Error): void {
    this.options.logger.error('measurements file rejected; keeping the last good measurements', {
      path: this.options.path,
      generation: this.generation,
      error: error.message,
    });
    this.options.onFailed?.(error);
  }
}
