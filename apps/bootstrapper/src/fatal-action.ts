import { spawn } from 'node:child_process';
import type { Logger } from '@constellation/logger';

/**
 * What happens after an unrecoverable failure past the point of no return (the state disk is
 * already marked for reset): reboot the machine, or, for tests and `mini`, exit with a code the
 * supervisor treats as a reboot.
 */
export type FatalAction = (reason: Error) => Promise<void>;

export const REBOOT_EXIT_CODE = 75;

/** `systemctl reboot` only queues a job and returns within seconds; a minute means it is stuck. */
const REBOOT_COMMAND_TIMEOUT_MS = 60_000;

export interface RebootOptions {
  command?: readonly string[];
  /** How long the command may run before it is killed and the action ends anyway. */
  timeoutMs?: number;
}

/**
 * Runs the reboot command, bounded: a command that hangs (a wedged systemd) or fails must not
 * hold the node locked for ever. The action then ends and the bootstrapper exits with its error;
 * systemd starts it again, and it takes this path, and tries the reboot, once more.
 */
export function rebootAction(logger: Logger, options: RebootOptions = {}): FatalAction {
  const [program = 'systemctl', ...args] = options.command ?? ['systemctl', 'reboot'];
  const timeoutMs = options.timeoutMs ?? REBOOT_COMMAND_TIMEOUT_MS;
  return async (reason) => {
    logger.error('unrecoverable failure after the point of no return; rebooting', { err: reason });
    const outcome = await new Promise<string | undefined>((resolve) => {
      const child = spawn(program, args, { stdio: 'ignore' });
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(`did not finish within ${timeoutMs} ms and was killed`);
      }, timeoutMs);
      child.once('error', (err) => {
        clearTimeout(timer);
        resolve(`could not be started: ${err.message}`);
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        resolve(code === 0 ? undefined : `failed (${signal ?? `exit code ${String(code)}`})`);
      });
    });
    if (outcome !== undefined)
      logger.error(`the reboot command ${outcome}; exiting so that the bootstrapper is started again`, {
        command: [program, ...args].join(' '),
      });
  };
}

export function exitAction(logger: Logger): FatalAction {
  return (reason) => {
    logger.error('unrecoverable failure after the point of no return; exiting for a reboot', {
      err: reason,
      exitCode: REBOOT_EXIT_CODE,
    });
    process.exit(REBOOT_EXIT_CODE);
  };
}
