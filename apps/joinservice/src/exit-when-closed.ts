import type { Logger } from '@constellation/logger';

/** How long the process may stay up once the service has closed, before it exits anyway. */
export const EXIT_GRACE_MS = 3_000;

/**
 * Ends the process `graceMs` after the service closed if anything still holds it open (a cut
 * call's timer, a socket a peer keeps): a pod told to stop must stop, and a test that stops the
 * service waits for its exit. What held it open is logged first, so the leak can be found. The
 * timer itself holds nothing open: a process with nothing left exits at once.
 */
export function exitWhenClosed(log: Logger, graceMs = EXIT_GRACE_MS): void {
  setTimeout(() => {
    log.warn('joinservice still held open after closing; exiting', {
      graceMs,
      openResources: process.getActiveResourcesInfo(),
    });
    process.exit(0);
  }, graceMs).unref();
}
