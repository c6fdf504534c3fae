import type { FatalAction } from './fatal-action.js';

export type BootstrapOutcome = 'initialized' | 'joined' | 'rejoined' | 'already-bootstrapped' | 'stopped';

export interface BootstrapperOptions {
  initHost: string;
  initPort: number;
  recoveryPort: number;
  joinInitialBackoffMs: number;
  joinMaxBackoffMs: number;
  requestTimeoutMs: number;
  fatal: FatalAction;
  /** Told the bound port of the InitServer (or RecoveryServer) once it listens. */
  onListening?: (server: 'init' | 'recovery', port: number) => void;
  /**
   * How long init or join may take once the node is locked; past it the node gives up like after
   * any other failure past the point of no return (disk marked for reset, fatal action). 20 min.
   */
  committedTimeoutMs?: number;
  /**
   * Ends a fresh node's start before the point of no return: the InitServer closes, the join
   * client stops polling (and records nothing more), and `run` resolves 'stopped'. Past the point
   * of no return it is ignored: the node joins or resets.
   */
  signal?: AbortSignal;
}
