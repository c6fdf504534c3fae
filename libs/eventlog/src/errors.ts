/** Where in the log a problem was found: byte offset and, once past the header, the event's index. */
export interface EventLogPosition {
  /** Byte offset of the field that is wrong, from the start of the log. */
  readonly offset: number;
  /** Index of the event being read (0 is the first event, the Spec ID header in crypto-agile logs). */
  readonly eventIndex: number | undefined;
}

/**
 * A log that is not a well-formed, bounded TCG event log. The message names the event, the offset
 * and what was expected, so an operator (or a test) can see exactly which byte is wrong.
 */
export class EventLogError extends Error {
  override readonly name = 'EventLogError';
  readonly offset: number;
  readonly eventIndex: number | undefined;

  constructor(position: EventLogPosition, problem: string) {
    const where =
      position.eventIndex === undefined
        ? `at offset ${position.offset}`
        : `event ${position.eventIndex} at offset ${position.offset}`;
    super(`event log: ${where}: ${problem}`);
    this.offset = position.offset;
    this.eventIndex = position.eventIndex;
  }
}
