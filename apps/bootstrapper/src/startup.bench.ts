// `npm run bench`: time from starting the bootstrapper to its InitServer listening on a first boot,
// as the bundle (dist/: the entry file and the chunks it imports later; what mini runs) and as the
// single executable (CommonJS pieces, the main one with V8's code cache; what the node .deb installs), and
// its resident memory then and a second later (the join client has started polling by then), next to `node -e 0` and to the
// first-boot LUKS format timed apart (the same format of the same image size, in this process),
// all in the same run. The format runs while the InitServer starts (StateDisk.formatInBackground):
// the start is compared with `node -e 0` whole, run just before it (pairs share the machine's
// speed of the moment, which drifts by a fifth here). Prints medians.
import { spawn } from 'node:child_process';
import { readFile, readdir, stat, truncate, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { hashInitSecret } from '@constellation/keys';
import { MetadataServer } from '@constellation/instance-metadata';
import { createEkCa } from '@constellation/swtpm';
import { StateDisk } from '@constellation/state-disk';
import { createTempDir, repoRoot, runChecked, startSwtpm } from '@constellation/testing';

const RUNS = Number(process.env['BENCH_RUNS'] ?? 5);
/** How long one start may take to listen before the bench gives up (a start takes about 0.1 to 0.3 s). */
const START_TIMEOUT_MS = 30_000;
const root = repoRoot();
await runChecked('npm', ['run', 'build', '--silent', '-w', '@constellation/bootstrapper'], {
  timeoutMs: 120_000,
  cwd: root,
});
const bundle = join(root, 'apps/bootstrapper/dist/bootstrapper.mjs');
const executable = (
  await runChecked(
    process.execPath,
    [
      '--conditions=@constellation/source',
      '--import',
      'tsx',
      'libs/packaging/src/sea-main.ts',
      'constellation-bootstrapper',
    ],
    { timeoutMs: 300_000, cwd: root },
  )
).stdout
  .toString()
  .trim();
// A booted node reads the executable from its disk. The build just wrote it, and pages of a file
// still cached from its writing map into a process in larger pieces: its resident memory read
// up to 10 MiB more than after the same file was read back from disk (measured). Drop them.
await runChecked('dd', [`if=${executable}`, 'iflag=nocache', 'count=0', 'status=none'], { timeoutMs: 10_000 });
const metadata = await MetadataServer.start({
  instances: [{ name: 'bench', role: 'control-plane', ip: '127.0.0.1' }],
  endpoint: { host: '127.0.0.1', apiServerPort: 1, joinServicePort: 1, initPort: 0 },
  initSecretHash: await hashInitSecret(Buffer.from('x'), { log2N: 10, r: 8, p: 1 }),
});
// Nodes attest with tpm2-ek: their TPMs carry an EK certificate, and the image pins the EK CA root.
const caDir = await createTempDir('constellation-bench-ek-ca-');
const ekCa = await createEkCa(join(caDir.path, 'ca'), { name: 'bench' });
/** One way of shipping the program, and what its starts measured. */
interface Starts {
  label: string;
  command: string;
  args: string[];
  times: number[];
  untilFormat: number[];
  rss: number[];
  rssLater: number[];
  /** `node -e 0`, run just before each start. */
  bare: number[];
}
const programs: Starts[] = [
  { label: 'bundle (mini)', command: process.execPath, args: [bundle] },
  { label: 'single executable (.deb)', command: executable, args: [] },
].map((program) => ({ ...program, times: [], untilFormat: [], rss: [], rssLater: [], bare: [] }));
const formats: number[] = [];
/** A blank 32 MiB disk image in `dir`, the size of a first boot's state disk here. */
async function blankImage(dir: string): Promise<string> {
  const image = join(dir, 'state.img');
  await writeFile(image, '');
  await truncate(image, 32 * 1024 * 1024);
  return image;
}
const residentMiB = async (pid: number | undefined): Promise<number> => {
  const status = await readFile(`/proc/${String(pid)}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
};
const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
/** One first-boot start of `program` on a fresh TPM and disk, with a `node -e 0` run just before it. */
async function measureStart(program: Starts, i: number): Promise<void> {
  const dir = await createTempDir('constellation-bench-node-');
  // Manufacturing (EK certificate) is the platform's work, not the bootstrapper's: not timed.
  const swtpm = await startSwtpm({ manufacture: { ca: ekCa, vmid: 'bench' } });
  const image = await blankImage(dir.path);
  // node -e 0 right before each start: this machine's speed drifts, and a pair shares it.
  const bareStarted = performance.now();
  await runChecked(process.execPath, ['-e', '0'], { timeoutMs: 30_000 });
  program.bare.push(performance.now() - bareStarted);
  const started = performance.now();
  const child = spawn(
    program.command,
    [
      ...program.args,
      `--root=${dir.path}`,
      `--tpm=swtpm:${swtpm.host}:${swtpm.port}`,
      `--ek-roots=${ekCa.rootCertPath}`,
      `--state-disk=${image}`,
      '--disk-kdf=fast',
      `--metadata-url=${metadata.url}`,
      '--node-name=bench',
      '--init-host=127.0.0.1',
      '--init-port=0',
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  try {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      // A start that never listens (a broken build, a wrong flag) ends the bench with its output.
      const timer = setTimeout(() => {
        reject(
          new Error(`${program.label} was not listening after ${String(START_TIMEOUT_MS)} ms: ${out.slice(-300)}`),
        );
      }, START_TIMEOUT_MS);
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (program.untilFormat.length === i && out.includes('"formatting the state disk for first boot"'))
          program.untilFormat.push(performance.now() - started);
        if (out.includes('"init server listening"')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${program.label} exited with ${String(code)}: ${out.slice(-300)}`));
      });
    });
    program.times.push(performance.now() - started);
    program.rss.push(await residentMiB(child.pid));
    await sleep(1000);
    program.rssLater.push(await residentMiB(child.pid));
  } finally {
    child.kill('SIGKILL');
    await swtpm.stop();
    await dir.remove();
  }
}

try {
  for (let i = 0; i < RUNS; i++) {
    // The first-boot format alone: same size, same KDF, in this process.
    const dir = await createTempDir('constellation-bench-luks-');
    const image = await blankImage(dir.path);
    const formatting = performance.now();
    await new StateDisk({ device: image, kdf: 'fast' }).format(Buffer.alloc(32, 1));
    formats.push(performance.now() - formatting);
    await dir.remove();
  }
  // The two ways alternate, so both share the machine's speed of the moment.
  for (let i = 0; i < RUNS; i++) for (const program of programs) await measureStart(program, i);
} finally {
  await metadata.close();
  await caDir.remove();
}
// What a start reads: the entry and the chunks it imports statically (transitively); the rest of
// chunks/ is read only when the code importing it runs.
const readAtStart = new Set<string>();
const pending = [bundle];
for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
  if (readAtStart.has(file)) continue;
  readAtStart.add(file);
  const text = await readFile(file, 'utf8');
  // Static imports only (minified: `import{a as b}from"./chunks/x.mjs"`), not import("...").
  for (const [, path] of text.matchAll(/(?:^|[;\s])import\s*(?:[^;()"]*?from\s*)?"(\.\/[^"]+)"/g))
    if (path !== undefined) pending.push(join(dirname(file), path));
}
const kib = async (files: Iterable<string>): Promise<number> => {
  let bytes = 0;
  for (const file of files) bytes += (await stat(file)).size;
  return bytes >> 10;
};
const chunks = join(dirname(bundle), 'chunks');
const allChunks = (await readdir(chunks).catch(() => [])).filter((n) => n.endsWith('.mjs')).map((n) => join(chunks, n));
console.log(
  `\nBundled bootstrapper: ${await kib(readAtStart)} KiB read at start (entry and ${readAtStart.size - 1} chunks), ${await kib([bundle, ...allChunks])} KiB in all, ${RUNS} starts`,
);
const format = median(formats);
console.log(`LUKS format of the same image, timed apart                     median ${format.toFixed(0)} ms`);
for (const program of programs) {
  const total = median(program.times);
  const ratio = median(program.times.map((time, i) => time / (program.bare[i] ?? Number.NaN)));
  console.log(`\n${program.label}: ${program.command} ${program.args.join(' ')}`);
  console.log(
    `  node -e 0 (same run, just before each start)                median ${median(program.bare).toFixed(0)} ms`,
  );
  console.log(
    `  start to InitServer listening (first boot: EK certificate read, LUKS format under way)  median ${total.toFixed(0)} ms; median of start / node -e 0 pairs ${ratio.toFixed(2)}x (goal <= 2x)`,
  );
  console.log(
    `    of which before the LUKS format starts                    median ${median(program.untilFormat).toFixed(0)} ms; listening came ${(total - median(program.untilFormat)).toFixed(0)} ms after the format started (it runs meanwhile)`,
  );
  console.log(
    `  resident memory when listening                              median ${median(program.rss).toFixed(1)} MiB (goal <= 60 MiB)`,
  );
  console.log(
    `  resident memory 1 s after listening (join client polling)     median ${median(program.rssLater).toFixed(1)} MiB`,
  );
}
