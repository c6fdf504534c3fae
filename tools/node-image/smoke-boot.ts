// Boots a built node image once (QEMU, OVMF, swtpm) and checks from its serial console that it
// verified its root, reached multi-user.target, started the bootstrapper, and printed its PCRs and
// a firmware event log that replays to them. Prints the boot's timings and PCR 4, 9 and 11.
//
//   node --conditions=@constellation/source --import tsx tools/node-image/smoke-boot.ts [image dir]
import { parseEventLog, replayEventLog } from '@constellation/eventlog';
import { Command, InvalidArgumentError, Option } from 'commander';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { bootVm } from './boot-vm.js';
import { readManifest } from './manifest.js';
import { formatSeconds, progress, run } from './progress.js';
import { HERE } from './recipe.js';
import { BOOTSTRAPPER_STARTED, bootTimeline, parseBootMeasurements } from './serial-log.js';

interface Options {
  timeout: number;
  memory: number;
  serialLog?: string;
}

function positive(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0)
    throw new InvalidArgumentError(`Expected a positive whole number, got ${text}`);
  return value;
}

const seconds = (ms: number | undefined): string => (ms === undefined ? '—' : `${(ms / 1000).toFixed(1)} s`);

async function main(): Promise<boolean> {
  const command = new Command('smoke-boot.ts')
    .description(
      'Boots the node image once under QEMU (TCG) with OVMF and a fresh swtpm, and checks its serial console: root verified, multi-user.target reached, the bootstrapper started, PCRs 4/9/11 printed and the event log replaying to them. Without a directory, boots the image `npm run node-image` builds (or has cached).',
    )
    .argument('[image-dir]', 'a directory with esp.img, root.img, root.verity and manifest.json')
    .addOption(new Option('--timeout <seconds>', 'the longest the VM may run').argParser(positive).default(300))
    .addOption(new Option('--memory <MiB>', 'guest memory').argParser(positive).default(1024))
    .addOption(new Option('--serial-log <file>', 'where the serial console goes (default: a temporary directory)'))
    .parse(process.argv.slice(2), { from: 'user' });
  const options = command.opts<Options>();
  let dir = command.args[0];
  if (dir === undefined) {
    dir = (
      await run(
        process.execPath,
        ['--conditions=@constellation/source', '--import', 'tsx', join(HERE, 'build-node-image.ts')],
        { showStderr: true },
      )
    ).trim();
  }
  dir = resolve(dir);
  const manifest = await readManifest(dir);
  const serialLog = options.serialLog ?? join(await mkdtemp(join(tmpdir(), 'node-image-boot-')), 'serial.log');
  progress(`booting ${dir} (root hash ${manifest.verity.rootHash}); serial console in ${serialLog}`);

  const done = (serial: string): boolean => {
    let measured;
    try {
      measured = parseBootMeasurements(serial);
    } catch {
      return true; // a damaged event log: nothing more to wait for (reported below)
    }
    return (
      /Reached target .*(multi-user\.target|Multi-User System)/.test(serial) &&
      BOOTSTRAPPER_STARTED.test(serial) &&
      measured.eventLog !== undefined
    );
  };
  const result = await bootVm({
    disks: [
      { file: join(dir, 'esp.img'), readOnly: true, serial: 'esp' },
      { file: join(dir, 'root.img'), readOnly: true, serial: 'root' },
      { file: join(dir, 'root.verity'), readOnly: true, serial: 'root-verity' },
    ],
    serialLog,
    memoryMiB: options.memory,
    timeoutMs: options.timeout * 1000,
    until: done,
  });
  const timeline = bootTimeline(result.lines);
  const measured = parseBootMeasurements(result.serial);
  const report: string[] = [
    `outcome: ${result.outcome}${result.exitCode === null ? '' : ` (QEMU exit ${result.exitCode})`} after ${formatSeconds(result.durationMs / 1000)}`,
    `firmware (OVMF and systemd-stub): ${seconds(timeline.kernelStartMs)}`,
    `kernel and initrd, to the switch to systemd: ${seconds(
      timeline.switchRootMs === undefined || timeline.kernelStartMs === undefined
        ? undefined
        : timeline.switchRootMs - timeline.kernelStartMs,
    )}`,
    `systemd to multi-user.target: ${seconds(
      timeline.multiUserMs === undefined || timeline.switchRootMs === undefined
        ? undefined
        : timeline.multiUserMs - timeline.switchRootMs,
    )} (reached at ${seconds(timeline.multiUserMs)})`,
    `bootstrapper unit started at ${seconds(timeline.bootstrapperStartedMs)}`,
  ];
  for (const pcr of [4, 9, 11]) report.push(`PCR ${pcr} (sha256): ${measured.pcrs[pcr] ?? 'not printed'}`);
  let ok = result.outcome === 'until';
  if (measured.eventLog !== undefined) {
    const log = parseEventLog(measured.eventLog);
    const replayed = replayEventLog(log).get('sha256');
    report.push(`event log: ${measured.eventLog.length} bytes, ${log.events.length} events`);
    for (const pcr of [4, 9, 11]) {
      const value = replayed?.get(pcr)?.toString('hex');
      const match = value === measured.pcrs[pcr];
      if (!match) ok = false;
      report.push(`  replayed PCR ${pcr}: ${value ?? 'no events'} ${match ? '(matches)' : '(DIFFERS from the TPM)'}`);
    }
  } else report.push('event log: not printed');
  if (timeline.initrdError !== undefined) report.push(`initrd: ${timeline.initrdError}`);
  if (timeline.panic !== undefined) report.push(`kernel: ${timeline.panic}`);
  if (result.qemuMessages.trim() !== '') report.push(`QEMU said: ${result.qemuMessages.trim()}`);
  process.stdout.write(`${report.join('\n')}\n`);
  return ok;
}

try {
  process.exitCode = (await main()) ? 0 : 1;
} catch (error) {
  process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
