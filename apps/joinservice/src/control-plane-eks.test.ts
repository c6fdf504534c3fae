import { describe, expect, it } from 'vitest';
import { parseControlPlaneEks } from './control-plane-eks.js';

const A = 'a'.repeat(64);
const B = '0123456789abcdef'.repeat(4);

describe('parseControlPlaneEks (--control-plane-eks)', () => {
  it('reads one hash per line, with or without "sha256:", any case, comments and blank lines skipped', () => {
    const list = parseControlPlaneEks(`# rack 3\n\nsha256:${A}  # cp-1\n${B.toUpperCase()}\n`, 'cp.txt');
    expect([...list].sort()).toEqual([B, A].sort());
  });

  it('names the file, the line and what was expected for anything else', () => {
    expect(() => parseControlPlaneEks(`sha256:${A}\nsha1:${'b'.repeat(40)}\n`, '/etc/cp.txt')).toThrow(
      `/etc/cp.txt line 2: expected an EK hash "sha256:" followed by 64 hex digits, got "sha1:${'b'.repeat(40)}"`,
    );
    expect(() => parseControlPlaneEks(`sha256:${A.slice(1)}`, 'cp.txt')).toThrow(/^cp\.txt line 1: expected/);
  });

  it('an empty list lets no machine join as a control plane', () => {
    expect(parseControlPlaneEks('# none yet\n', 'cp.txt').size).toBe(0);
  });
});
