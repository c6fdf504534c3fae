import type { Writable } from 'node:stream';
import type { LogFields, Logger, LogLevel } from './logger.js';
import { sanitizeFields } from './sanitize-fields.js';

export type LogFormat = 'json' | 'text';

export interface StreamLoggerOptions {
  /** Name of the program, added to every JSON entry as `service`. */
  service: string;
  level?: LogLevel;
  /** `json`: one JSON object per line (daemons, `--log-format json`). `text`: readable lines (CLI). */
  format?: LogFormat;
  /** Where entries go; daemons use stdout, the CLI stderr. Several streams receive every entry. */
  streams?: readonly Writable[];
}

/** Lower is more severe; an entry is written when its rank is at most the threshold's (npm levels). */
const RANK: Readonly<Record<LogLevel, number>> = { error: 0, warn: 1, info: 2, debug: 5 };

/**
 * Binds the Logger interface to streams: each entry one line, written synchronously to every
 * stream. Only apps call this; libraries take a Logger. The JSON lines are those the apps wrote
 * with winston before (its timestamp and json formats: keys sorted at every depth, `service`
 * and `timestamp` overridable by fields, a `message` field appended to the message), without
 * loading winston and its ~300 KiB of dependencies at every start.
 */
export function createLogger(options: StreamLoggerOptions): Logger {
  const format = options.format ?? 'json';
  const streams = options.streams ?? [process.stdout];
  const threshold = RANK[options.level ?? 'info'];
  const line = format === 'json' ? jsonLine(options.service) : textLine;
  const write = (level: LogLevel, message: string, fields: Record<string, unknown>): void => {
    if (RANK[level] > threshold) return;
    const extra = fields['message'];
    const full = typeof extra === 'string' && extra !== '' ? `${message} ${extra}` : message;
    const text = `${line(level, full, fields)}\n`;
    for (const stream of streams) stream.write(text);
  };
  return bind(write, {});
}

type Write = (level: LogLevel, message: string, fields: Record<string, unknown>) => void;

function bind(write: Write, bound: LogFields): Logger {
  const emit =
    (level: LogLevel) =>
    (message: string, fields?: LogFields): void => {
      write(level, message, sanitizeFields({ ...bound, ...fields }));
    };
  return {
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    child: (fields) => bind(write, { ...bound, ...fields }),
  };
}

function jsonLine(service: string) {
  return (level: LogLevel, message: string, fields: Record<string, unknown>): string => {
    const entry = { service, timestamp: new Date().toISOString(), ...fields, level, message };
    return JSON.stringify(entry, sortedKeys);
  };
}

/** A JSON.stringify replacer that writes every object's keys in sorted order (stable lines). */
function sortedKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(record).sort()) sorted[key] = record[key];
  return sorted;
}

function textLine(level: LogLevel, message: string, fields: Record<string, unknown>): string {
  const rest = Object.entries(fields)
    .filter(([key]) => key !== 'level' && key !== 'message')
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  const prefix = level === 'info' ? '' : `${level}: `;
  return `${prefix}${message}${rest === '' ? '' : ` ${rest}`}`;
}
