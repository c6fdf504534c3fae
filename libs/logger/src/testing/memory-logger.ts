import type { LogFields, Logger, LogLevel } from '../logger.js';
import { sanitizeFields } from '../sanitize-fields.js';

export interface LogEntry {
  level: LogLevel;
  message: string;
  fields: Record<string, unknown>;
}

/**
 * A logger that keeps entries in memory, sanitised exactly like the stream logger. Tests use
 * it to assert on what was logged (and that no secret was).
 */
export class MemoryLogger implements Logger {
  readonly entries: LogEntry[];
  private readonly bound: LogFields;

  constructor(entries: LogEntry[] = [], bound: LogFields = {}) {
    this.entries = entries;
    this.bound = bound;
  }

  debug(message: string, fields?: LogFields): void {
    this.push('debug', message, fields);
  }
  info(message: string, fields?: LogFields): void {
    this.push('info', message, fields);
  }
  warn(message: string, fields?: LogFields): void {
    this.push('warn', message, fields);
  }
  error(message: string, fields?: LogFields): void {
    this.push('error', message, fields);
  }
  child(fields: LogFields): Logger {
    return new MemoryLogger(this.entries, { ...this.bound, ...fields });
  }

  /** All entries as JSON lines, the way a daemon would print them. */
  text(): string {
    return this.entries.map((entry) => JSON.stringify(entry)).join('\n');
  }

  private push(level: LogLevel, message: string, fields: LogFields | undefined): void {
    this.entries.push({ level, message, fields: sanitizeFields({ ...this.bound, ...fields }) });
  }
}
