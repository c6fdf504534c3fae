export { errorMessage } from './error-message.js';
export type { RefusalKind } from './refusal.js';
export { Refusal } from './refusal.js';
