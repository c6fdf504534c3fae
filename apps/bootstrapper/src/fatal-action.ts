import { spawn } from 'node:child_process';
import type { Logger } from '@constellation/logger';

/**
 * What happens after an unrecoverable failure past the point of no return (the state disk is
 * already marked for reset): reboot the machine, or, for tests and `mini`, exit with a code the
 * supervisor treats as a reboot.
 */
export type FatalAction = (reason: Error) => Promise<void>;

export const REBOOT_EXIT_CODE = 75;

export function rebootAction(logger: Logger, command: readonly string[] = ['systemctl', 'reboot']): FatalAction {
  return async (reason) => {
    logger.error('unrecoverable failure after the point of no return; rebooting', { err: reason });
    const [program = 'systemctl', ...args] = command;
    await new Promise<void>((resolve) => {
      const child = spawn(program, args, { stdio: 'ignore' });
      child.once('error', () => {
        resolve();
      });
      child.once('close', () => {
        resolve();
      });
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
