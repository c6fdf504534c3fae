import { errorMessage } from '@constellation/errors';
import type { Logger } from '@constellation/logger';
import { recordJoinStatus } from './join-status.js';
import type { JoinStatus } from './join-status.js';
import type { JoinStep } from './join-steps.js';

/**
 * Runs a join's steps one after another, as kubeadm's phase runner does: each named in the node's
 * log as it starts and ends, and, once the node is committed, in join-status.json. A step that
 * fails ends the join with an error that names it.
 */
export class JoinProgress {
  private committed = false;
  private step: JoinStep | undefined;
  private readonly log: Logger;
  private readonly statusPath: string;
  private readonly attempts: number;

  constructor(log: Logger, statusPath: string, attempts: number) {
    this.log = log;
    this.statusPath = statusPath;
    this.attempts = attempts;
  }

  /** The step under way or last begun; undefined before the first. */
  get current(): JoinStep | undefined {
    return this.step;
  }

  /**
   * Marks the point of no return passed: from here on the node owns its files and every step is
   * recorded. Before it the InitServer may own the node, so nothing is written.
   */
  async commit(): Promise<void> {
    this.committed = true;
    await this.record('joining');
  }

  async run<T>(step: JoinStep, work: () => Promise<T>, detail?: string): Promise<T> {
    this.step = step;
    const started = Date.now();
    this.log.info('join step started', { step, ...(detail === undefined ? {} : { detail }) });
    if (this.committed) await this.record('joining');
    let result: T;
    try {
      result = await work();
    } catch (err) {
      const message = `join step ${step} failed: ${errorMessage(err)}`;
      this.log.error('join step failed', { step, elapsedMs: Date.now() - started, err });
      if (this.committed) await this.record('failed', message);
      throw new Error(message, { cause: err });
    }
    this.log.info('join step done', { step, elapsedMs: Date.now() - started });
    return result;
  }

  /** The last step finished: the node is in the cluster. */
  async joined(): Promise<void> {
    await this.record('joined');
  }

  private async record(state: JoinStatus['state'], message?: string): Promise<void> {
    if (this.step === undefined) return;
    await recordJoinStatus(this.statusPath, {
      state,
      step: this.step,
      attempts: this.attempts,
      ...(message === undefined ? {} : { message }),
      at: new Date().toISOString(),
    });
  }
}
