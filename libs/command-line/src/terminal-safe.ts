/** Control characters a terminal acts on: C0 but tab and newline, DEL, and C1 (ECMA-48). */
// eslint-disable-next-line no-control-regex -- these are what it finds
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * `text` with every control character a terminal would act on written as a visible escape
 * (`\u001b`). Error messages carry text from the other side (a node's refusal, a server's
 * status details): escape sequences in them moved the operator's cursor, rewrote lines already
 * printed, or set the window title (red-team finding).
 */
export function terminalSafe(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
