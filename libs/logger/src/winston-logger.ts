import type { Writable } from 'node:stream';
import winston from 'winston';
import type { LogFields, Logger, LogLevel } from './logger.js';
import { sanitizeFields } from './sanitize-fields.js';

export type LogFormat = 'json' | 'text';

export interface WinstonLoggerOptions {
  /** Name of the program, added to every JSON entry as `service`. */
  service: string;
  level?: LogLevel;
  /** `json`: one JSON object per line (daemons, `--log-format json`). `text`: readable lines (CLI). */
  format?: LogFormat;
  /** Where entries go; daemons use stdout, the CLI stderr. Several streams receive every entry. */
  streams?: readonly Writable[];
}

/** Binds the Logger interface to winston. Only apps call this; libraries take a Logger. */
export function createWinstonLogger(options: WinstonLoggerOptions): Logger {
  const format = options.format ?? 'json';
  const streams = options.streams ?? [process.stdout];
  const base = winston.createLogger({
    level: options.level ?? 'info',
    defaultMeta: format === 'json' ? { service: options.service } : {},
    format: format === 'json' ? jsonFormat() : textFormat(),
    transports: streams.map((stream) => new winston.transports.Stream({ stream })),
  });
  return wrap(base, {});
}

function wrap(base: winston.Logger, bound: LogFields): Logger {
  const emit =
    (level: LogLevel) =>
    (message: string, fields?: LogFields): void => {
      base.log(level, message, sanitizeFields({ ...bound, ...fields }));
    };
  return {
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    child: (fields) => wrap(base, { ...bound, ...fields }),
  };
}

function jsonFormat(): winston.Logform.Format {
  return winston.format.combine(winston.format.timestamp(), winston.format.json());
}

function textFormat(): winston.Logform.Format {
  return winston.format.printf((info) => {
    const { level, message, ...rest } = info;
    const fields = Object.entries(rest)
      .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
      .join(' ');
    const prefix = level === 'info' ? '' : `${level}: `;
    return `${prefix}${String(message)}${fields === '' ? '' : ` ${fields}`}`;
  });
}
