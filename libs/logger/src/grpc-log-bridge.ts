import type { Logger } from './logger.js';

/** The part of `@grpc/grpc-js` the bridge needs; passed in so this package does not depend on grpc-js. */
export interface GrpcLogging {
  setLogger(logger: Partial<Console>): void;
  setLogVerbosity(verbosity: number): void;
}

/** grpc-js verbosity values (`LogVerbosity` in grpc-js). */
const GRPC_VERBOSITY = { DEBUG: 0, INFO: 1, ERROR: 2 } as const;

/**
 * Routes grpc-js's own log lines into `logger`. grpc-js calls `debug`, `info` or `error` on the
 * installed logger by severity; trace lines carry a "<time> | v<version> <pid> | " prefix that
 * the structured entry does not need.
 */
export function bridgeGrpcLogs(grpc: GrpcLogging, logger: Logger, verbose = false): void {
  const log = logger.child({ component: 'grpc' });
  const forward =
    (emit: (message: string) => void) =>
    (...args: unknown[]): void => {
      const line = args.map((arg) => (typeof arg === 'string' ? arg : String(arg))).join(' ');
      emit(line.replace(/^\S+ \| v\S+ \d+ \| /, ''));
    };
  grpc.setLogVerbosity(verbose ? GRPC_VERBOSITY.DEBUG : GRPC_VERBOSITY.ERROR);
  grpc.setLogger({
    debug: forward((message) => {
      log.debug(message);
    }),
    info: forward((message) => {
      log.info(message);
    }),
    error: forward((message) => {
      log.error(message);
    }),
  });
}
