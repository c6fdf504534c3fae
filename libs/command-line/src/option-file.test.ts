import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { readOptionFile } from './option-file.js';
import { UsageError } from './usage-error.js';

describe('readOptionFile', () => {
  it("gives the reader's result", async () => {
    expect(await readOptionFile('--roots', () => Promise.resolve(42))).toBe(42);
  });

  it('turns a file that cannot be read into a usage error naming the option', async () => {
    const failure = readOptionFile('--ek-roots', () => readFile('/nonexistent/roots.pem'));
    await expect(failure).rejects.toBeInstanceOf(UsageError);
    await expect(failure).rejects.toThrow(
      /^--ek-roots: ENOENT: no such file or directory, open '\/nonexistent\/roots\.pem'$/,
    );
  });
});
