/** Structured fields attached to a log entry. Variable data goes here, never into the message. */
export type LogFields = Readonly<Record<string, unknown>>;

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * What libraries log to. Libraries receive a Logger from their caller and never create one;
 * apps decide where logs go (see createLogger).
 */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every entry, e.g. `{ component: 'join-client' }`. */
  child(fields: LogFields): Logger;
}

const ignore = (): void => undefined;

/** A logger that drops everything; the default for libraries whose caller passes none. */
export const noopLogger: Logger = {
  debug: ignore,
  info: ignore,
  warn: ignore,
  error: ignore,
  child: () => noopLogger,
};
