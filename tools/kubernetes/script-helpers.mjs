// What the build scripts beside this file share (images.mjs, conformance-build.mjs): running a
// program with its output kept for the error, and durations for progress lines. build.mjs keeps
// its own copies: it is part of the programs' recipe hash, and changing it rebuilds every program.
// Part of both scripts' recipe hashes.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** This file, for the recipe hashes of the scripts that use it. */
export const SCRIPT_HELPERS_FILE = fileURLToPath(import.meta.url);

/** `90` → `1 min 30 s`, `42.4` → `42 s`. */
export function formatSeconds(s) {
  return s >= 60 ? `${Math.floor(s / 60)} min ${String(Math.round(s % 60)).padStart(2, '0')} s` : `${Math.round(s)} s`;
}

/**
 * Runs `command` (spawn's options, and `keep`: how many characters of its output to keep, 8000 by
 * default); resolves to the kept output, rejects with it when the program fails.
 */
export function run(command, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk) => {
      output = (output + chunk.toString()).slice(-(options.keep ?? 8000));
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(output);
      else reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${output.trim()}`));
    });
  });
}
