import { config } from 'zod/mini';
import type { core } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

// zod/mini carries no messages until a locale is configured: English only, not zod's every locale.
// Modules that validate with zod/mini import this one, so the configuration comes first.
config(en());

/** The first problem zod found, naming the field: `role: Invalid option: expected one of ...`. */
export function firstIssue(error: core.$ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'invalid';
  return issue.path.length === 0 ? issue.message : `${issue.path.join('.')}: ${issue.message}`;
}
