import { Refusal } from '@constellation/errors';
import type { Logger } from '@constellation/logger';

/** How often, at most, a summary of the calls shed for load is logged while shedding lasts. */
export const SHED_SUMMARY_MS = 10_000;

/**
 * Says in the log that the service sheds join calls for load, without a line per call: a
 * 500-node storm sheds hundreds of calls in its first second, and a line each buried everything
 * else in the log (and took about a twentieth of the service's CPU while it was busiest,
 * measured). The first call shed is logged at once, with the refusal the node got; then at most
 * one summary per `SHED_SUMMARY_MS` counts the calls shed since, with the shortest and longest
 * time nodes were told to wait. The metric `constellation_joinservice_ticket_refusals_total{reason="busy"}`
 * counts every one.
 */
export class ShedLog {
  private timer: NodeJS.Timeout | undefined;
  private calls = 0;
  private shortestMs = Infinity;
  private longestMs = 0;
  private last = '';
  private windowStartedAt = 0;

  constructor(
    private readonly log: Logger,
    private readonly summaryMs = SHED_SUMMARY_MS,
  ) {}

  /** A call was refused for load with `refusal`. */
  shed(refusal: unknown): void {
    const message = refusal instanceof Error ? refusal.message : String(refusal);
    const retryAfterMs = refusal instanceof Refusal ? refusal.retryAfterMs : undefined;
    if (this.timer === undefined) {
      this.log.info('shedding calls for load', {
        refusal: message,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      });
      this.arm();
      return;
    }
    this.calls++;
    this.last = message;
    if (retryAfterMs !== undefined) {
      this.shortestMs = Math.min(this.shortestMs, retryAfterMs);
      this.longestMs = Math.max(this.longestMs, retryAfterMs);
    }
  }

  /** Logs the summary of the calls shed since the last line, if any (also on shutdown). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.calls === 0) return;
    this.log.info('shed calls for load', {
      calls: this.calls,
      sinceMs: Date.now() - this.windowStartedAt,
      ...(this.shortestMs === Infinity ? {} : { retryAfterMs: { shortest: this.shortestMs, longest: this.longestMs } }),
      lastRefusal: this.last,
    });
    this.calls = 0;
    this.shortestMs = Infinity;
    this.longestMs = 0;
    // Still shedding: the next summary in a window's time. A window without any ends the episode,
    // and the next call shed is logged at once again.
    this.arm();
  }

  private arm(): void {
    this.windowStartedAt = Date.now();
    this.timer = setTimeout(() => {
      this.flush();
    }, this.summaryMs);
    this.timer.unref();
  }
}
