/**
 * Thrown for input the user must fix (a bad flag value, an invalid config field). The message
 * names the flag or field and what was expected. Programs exit with code 2 for it.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * Thrown for a command that exists but whose capability has not been built yet. The message says
 * so plainly instead of pretending to work.
 */
export class NotBuiltYetError extends Error {
  override readonly name = 'NotBuiltYetError';
  constructor(what: string, tracking: string) {
    super(`${what} is not built yet (tracked in ${tracking})`);
  }
}
