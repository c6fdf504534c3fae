import { copyFile, mkdir, realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { runTool } from './run-tool.js';

/**
 * The shared libraries a dynamically linked program loads, as ldd lists them (the dynamic
 * loader included), so a FROM scratch image can hold the program and exactly what it needs.
 */
export async function sharedLibraries(binary: string): Promise<string[]> {
  const listing = await runTool('ldd', [binary]);
  const libraries: string[] = [];
  for (const line of listing.split('\n')) {
    // "libm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x…)" or "/lib64/ld-linux-x86-64.so.2 (0x…)";
    // linux-vdso has no file.
    const path = /(?:=>\s*)?(\/\S+)\s+\(0x[0-9a-f]+\)/.exec(line)?.[1];
    if (path !== undefined) libraries.push(path);
    else if (/not found/.test(line)) throw new Error(`${binary}: ldd cannot find ${line.trim()}`);
  }
  if (libraries.length === 0)
    throw new Error(`${binary}: ldd lists no libraries; expected a dynamically linked program`);
  return libraries;
}

/** Copies a file into a root file system at the same path, following symlinks (the image has none). */
export async function copyIntoRoot(root: string, path: string, as: string = path): Promise<void> {
  const target = join(root, as);
  await mkdir(dirname(target), { recursive: true });
  await copyFile(await realpath(path), target);
}
