import { readFile } from 'node:fs/promises';

/** A spec that cannot pass on mini for a reason outside our reach, skipped by its full name. */
export interface SkippedSpec {
  /** The spec's full name as the suite prints it (containers and leaf text, labels included). */
  name: string;
  reason: string;
}

/** A value as written: a double-quoted string (JSON escapes) or a plain one, trimmed. */
function scalar(raw: string, where: string): string {
  const value = raw.trim();
  if (!value.startsWith('"')) {
    // What YAML would not read as this plain text (a spec name starts with "[sig-…]").
    if (/^[[\]{}&*!|>'%@`#,?:-]/.test(value) || value.includes(': ') || value.includes(' #')) {
      throw new Error(`${where}: write ${value} in double quotes`);
    }
    return value;
  }
  try {
    const parsed: unknown = JSON.parse(value);
    if (typeof parsed === 'string') return parsed;
  } catch {
    // reported below
  }
  throw new Error(`${where}: ${value} is not a double-quoted string`);
}

/**
 * Reads the skip list: a YAML sequence of `name:` and `reason:` pairs, each on a line of its own,
 * values double-quoted (JSON escapes) or plain where YAML reads them as the same text; `#` starts a
 * comment line. Every entry needs both.
 */
export async function readSkipList(file: string): Promise<SkippedSpec[]> {
  const entries: SkippedSpec[] = [];
  let current: Partial<SkippedSpec> | undefined;
  const finish = (line: number): void => {
    if (current === undefined) return;
    if (current.name === undefined || current.reason === undefined || current.reason === '') {
      throw new Error(`${file}:${line}: every entry needs a name and a reason`);
    }
    entries.push({ name: current.name, reason: current.reason });
    current = undefined;
  };
  const lines = (await readFile(file, 'utf8')).split('\n');
  for (const [index, text] of lines.entries()) {
    const where = `${file}:${index + 1}`;
    if (/^\s*(#.*)?$/.test(text)) continue;
    const match = /^(- | {2})(name|reason):(.*)$/.exec(text);
    if (match === null) throw new Error(`${where}: expected "- name: …" or "  reason: …", got ${JSON.stringify(text)}`);
    const [, lead, key, value = ''] = match;
    if (lead === '- ') {
      finish(index + 1);
      current = {};
    } else if (current === undefined) {
      throw new Error(`${where}: "${key}" before the entry's "- name:"`);
    }
    if (key === 'name') current.name = scalar(value, where);
    else current.reason = scalar(value, where);
  }
  finish(lines.length);
  const seen = new Set<string>();
  for (const entry of entries) {
    if (seen.has(entry.name)) throw new Error(`${file}: ${entry.name} is listed twice`);
    seen.add(entry.name);
  }
  return entries;
}

/** A regular expression (RE2, as ginkgo's --skip takes it) that matches `text` literally. */
export function literalPattern(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
}
