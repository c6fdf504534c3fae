import { readFile } from 'node:fs/promises';
import { parseEnvFile } from './env-file.js';
import { errorMessage } from '@constellation/errors';

export interface OsInfo {
  /** VERSION_ID, e.g. "3815.2.0". */
  version: string;
  /** Board, e.g. "amd64-usr": COREOS_BOARD, else derived from the CPU architecture. */
  board: string;
}

const BOARDS: Record<string, string> = { x64: 'amd64-usr', arm64: 'arm64-usr' };

/** OS facts from `/usr/lib/os-release` (the path is a parameter). VERSION_ID is required. */
export async function readOsInfo(path: string, arch: string = process.arch): Promise<OsInfo> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${path}: ${errorMessage(err)}`, { cause: err });
  }
  const values = parseEnvFile(text);
  const version = values.get('VERSION_ID');
  if (version === undefined || version === '') throw new Error(`${path} has no VERSION_ID`);
  const board = values.get('COREOS_BOARD') ?? BOARDS[arch];
  if (board === undefined) throw new Error(`${path} has no COREOS_BOARD and architecture ${arch} has no default board`);
  return { version, board };
}
