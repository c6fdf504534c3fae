import { Option } from '@commander-js/extra-typings';

/** What every command needs from the program: the workspace it works in and where progress goes. */
export interface CommandContext {
  /** The `--workspace` directory, absolute: daemons started by mini (swtpm) change their working directory. */
  readonly workspace: () => string;
  /** Progress and notes (stderr); results go to stdout. */
  readonly print: (line: string) => void;
}

/** `--output text|json`, shared by every command that prints a result. */
export const outputOption = (): Option<'--output <format>', undefined, 'text', 'text' | 'json'> =>
  new Option('--output <format>', 'how to print the result')
    .choices(['text', 'json'] as const)
    .default('text' as const);

/** Writes a result to stdout. */
export function writeResult(text: string): void {
  process.stdout.write(text);
}

/** Writes a result as one JSON line. */
export function writeJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** Rows as text columns padded to their widest cell, one line each (ending in a newline). */
export function formatTable(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map(
    (row) =>
      `${row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd()}\n`,
  );
}
