import fc from 'fast-check';

/** One edit of a text document, as a fuzzer applies it to a valid file (YAML, JSON). */
export type TextMutation =
  | { kind: 'insert'; at: number; text: string }
  | { kind: 'delete'; at: number; count: number }
  | { kind: 'replace'; at: number; text: string }
  | { kind: 'truncate'; at: number }
  | { kind: 'duplicate-line'; line: number }
  | { kind: 'swap-lines'; a: number; b: number }
  | { kind: 'indent'; line: number; by: number };

/** Edits drawing inserted text from `token` (the format's interesting tokens); deletes up to `maxDelete`. */
export function textMutation(token: fc.Arbitrary<string>, maxDelete = 12): fc.Arbitrary<TextMutation> {
  return fc.oneof(
    fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: token }),
    fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), count: fc.integer({ min: 1, max: maxDelete }) }),
    fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), text: token }),
    fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
    fc.record({ kind: fc.constant('duplicate-line' as const), line: fc.nat() }),
    fc.record({ kind: fc.constant('swap-lines' as const), a: fc.nat(), b: fc.nat() }),
    fc.record({ kind: fc.constant('indent' as const), line: fc.nat(), by: fc.integer({ min: -4, max: 4 }) }),
  );
}

/** Applies one edit; positions wrap around the text, so every edit applies to every text. */
export function applyTextMutation(text: string, m: TextMutation): string {
  const at = 'at' in m ? m.at % (text.length + 1) : 0;
  const lines = text.split('\n');
  switch (m.kind) {
    case 'insert':
      return text.slice(0, at) + m.text + text.slice(at);
    case 'delete':
      return text.slice(0, at) + text.slice(at + m.count);
    case 'replace':
      return text.slice(0, at) + m.text + text.slice(at + m.text.length);
    case 'truncate':
      return text.slice(0, at);
    case 'duplicate-line': {
      const i = m.line % lines.length;
      lines.splice(i, 0, lines[i] ?? '');
      return lines.join('\n');
    }
    case 'swap-lines': {
      const a = m.a % lines.length;
      const b = m.b % lines.length;
      [lines[a], lines[b]] = [lines[b] ?? '', lines[a] ?? ''];
      return lines.join('\n');
    }
    case 'indent': {
      const i = m.line % lines.length;
      const line = lines[i] ?? '';
      lines[i] = m.by >= 0 ? ' '.repeat(m.by) + line : line.replace(new RegExp(`^ {0,${-m.by}}`), '');
      return lines.join('\n');
    }
  }
}
