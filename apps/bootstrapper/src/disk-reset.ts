import type { NodeContext } from './node-context.js';

/** The fatal path's first step: the next boot formats the state disk (a failure is logged, not thrown). */
export async function markDiskForReset(context: NodeContext): Promise<void> {
  try {
    await context.disk.setInitialized(false);
  } catch (err) {
    context.logger.error('could not mark the state disk for reset', { err });
  }
}
