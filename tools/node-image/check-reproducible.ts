// Builds the node image twice from the same inputs, each into a directory of its own (nothing
// from the cache), and compares the two: the dm-verity root hash and every output's SHA-256.
// Exit code 0 when they are the same. Options after `--` go to both builds (build-node-image.ts).
//
//   node --conditions=@constellation/source --import tsx tools/node-image/check-reproducible.ts [--keep] [-- build options]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readManifest } from './manifest.js';
import type { ImageManifest } from './manifest.js';
import { formatSeconds, progress, run } from './progress.js';
import { HERE } from './recipe.js';

async function build(out: string, extra: readonly string[]): Promise<{ manifest: ImageManifest; seconds: number }> {
  const started = Date.now();
  await run(
    process.execPath,
    [
      '--conditions=@constellation/source',
      '--import',
      'tsx',
      join(HERE, 'build-node-image.ts'),
      '--output',
      out,
      ...extra,
    ],
    { showStderr: true },
  );
  return { manifest: await readManifest(out), seconds: (Date.now() - started) / 1000 };
}

async function main(): Promise<boolean> {
  const args = process.argv.slice(2);
  const split = args.indexOf('--');
  const own = split < 0 ? args : args.slice(0, split);
  const extra = split < 0 ? [] : args.slice(split + 1);
  const keep = own.includes('--keep');
  if (own.some((a) => a !== '--keep')) throw new Error('usage: check-reproducible.ts [--keep] [-- build options]');
  const scratch = await mkdtemp(join(tmpdir(), 'node-image-reproducible-'));
  try {
    progress('first build');
    const first = await build(join(scratch, 'first'), extra);
    progress('second build');
    const second = await build(join(scratch, 'second'), extra);
    const rows: string[] = [];
    let same = first.manifest.verity.rootHash === second.manifest.verity.rootHash;
    rows.push(
      `root hash    ${first.manifest.verity.rootHash} ${same ? 'same' : `DIFFERS: ${second.manifest.verity.rootHash}`}`,
    );
    for (const [name, a] of Object.entries(first.manifest.files)) {
      const b = second.manifest.files[name];
      const equal = a.sha256 === b?.sha256;
      if (!equal) same = false;
      rows.push(`${name.padEnd(12)} ${a.sha256} ${equal ? 'same' : `DIFFERS: ${b?.sha256 ?? 'missing'}`}`);
    }
    const packagesEqual = JSON.stringify(first.manifest.packages) === JSON.stringify(second.manifest.packages);
    rows.push(
      `packages     ${packagesEqual ? 'same versions' : 'DIFFERENT versions (the archive changed between the builds)'}`,
    );
    rows.push(`build times  ${formatSeconds(first.seconds)} and ${formatSeconds(second.seconds)}`);
    rows.push(same ? 'reproducible: the two builds are identical' : 'NOT reproducible');
    if (keep) rows.push(`builds kept in ${scratch}`);
    process.stdout.write(`${rows.join('\n')}\n`);
    return same;
  } finally {
    if (!keep) await rm(scratch, { recursive: true, force: true });
  }
}

try {
  process.exitCode = (await main()) ? 0 : 1;
} catch (error) {
  process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
