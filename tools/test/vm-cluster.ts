// `npm run test:vm`: the end-to-end checks with VM workers, too long for npm test's budget (VMs
// run under software emulation here: minutes each). One mini cluster: a namespace control plane,
// an honest VM worker and three VMs booting a modified UKI. It checks that the honest VM joins and
// is Ready, that each tampered VM is refused by the JoinService naming the measured event that
// differs, that `constellation verify` attests the VM against the values computed from the image,
// that `mini reboot` brings the VM back, and that `mini down` leaves nothing behind. Prints
// `N passed, N failed` last. Usage (after tools/dev/mini-prepare.sh --node-image):
//   node --conditions=@constellation/source --import tsx tools/test/vm-cluster.ts <kubernetes bin dir> <node image dir>
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openMachineAt } from '@constellation/machines';

const ROOT = join(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'apps', 'cli', 'dist', 'constellation.mjs');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in the workspace, bounded; its progress goes to our stderr as it comes. */
function cli(workspace: string, args: readonly string[], timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, '--workspace', workspace, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      process.stderr.write(chunk);
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`constellation ${args.join(' ')} did not finish within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function pgrep(pattern: string): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn('pgrep', ['-af', pattern], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('close', () => {
      resolve(out);
    });
  });
}

interface UpNode {
  name: string;
  ip: string;
  ready: boolean;
  attestation: string;
}

const results: { name: string; error?: string }[] = [];

async function check(name: string, body: () => Promise<void> | void): Promise<void> {
  try {
    await body();
    results.push({ name });
    process.stderr.write(`PASS ${name}\n`);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    results.push({ name, error: message });
    process.stderr.write(`FAIL ${name}: ${message}\n`);
  }
}

function expect(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

/** The honest VM's state disk is a dm-crypt mapping on /run/state, under its Kubernetes directories. */
async function checkStateDisk(workspace: string, honest: string): Promise<void> {
  const machine = await openMachineAt(join(workspace, 'constellation-mini', honest));
  if (machine === undefined) throw new Error(`no machine record for ${honest}`);
  const run = async (command: string[]): Promise<string> =>
    (await machine.exec(command, { timeoutMs: 60_000 })).stdout.trim();
  expect((await run(['lsblk', '-n', '-d', '-o', 'TYPE', '/dev/mapper/state'])) === 'crypt', 'no crypt mapping');
  const sources = await run(['findmnt', '-n', '-o', 'TARGET,SOURCE,FSTYPE', '-R', '/run/state']);
  expect(/^\/run\/state\s+\/dev\/mapper\/state\s+ext4$/m.test(sources), `/run/state: ${sources}`);
  for (const dir of ['/etc/kubernetes', '/var/lib/kubelet']) {
    // The topmost mount there (the image's tmpfs lies below it).
    const mount = (await run(['findmnt', '-n', '-o', 'SOURCE', '--mountpoint', dir])).split('\n').at(-1)?.trim();
    expect(mount === `/dev/mapper/state[${dir}]`, `${dir} is mounted from ${mount ?? 'nothing'}, not the state disk`);
  }
  const kubelet = await run(['ls', '/etc/kubernetes']);
  expect(kubelet.includes('kubelet.conf'), `/etc/kubernetes holds: ${kubelet}`);
}

/** `mini reboot` of the honest VM: its new boot rejoins, and its Node is Ready and attested again. */
async function checkRebootRejoins(workspace: string, honest: string): Promise<void> {
  const reboot = await cli(workspace, ['mini', 'reboot', honest], 15 * 60_000);
  expect(reboot.code === 0, `exit ${String(reboot.code)}: ${reboot.stderr}`);
  // The console log starts again with the new boot: its bootstrapper's outcome is this boot's.
  const serialLog = join(workspace, 'constellation-mini', honest, 'serial.log');
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    const serial = await readFile(serialLog, 'utf8');
    if (serial.includes('"rejoined the cluster"')) break;
    if (Date.now() > deadline)
      throw new Error(`${honest} did not rejoin within 15 min of its reboot; console tail: ${serial.slice(-2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 10_000));
  }
  // The kubelet found its configuration and credentials on the encrypted state disk.
  for (;;) {
    const status = await cli(workspace, ['status'], 120_000);
    const line = status.stdout.split('\n').find((l) => l.startsWith(`${honest} `)) ?? '';
    if (/\bTrue\s+attested\b/.test(line)) break;
    if (Date.now() > deadline) throw new Error(`${honest} not Ready and attested 15 min after its reboot: ${line}`);
    await new Promise((resolve) => setTimeout(resolve, 10_000));
  }
}

async function main(): Promise<void> {
  const [kubernetesBinDir, nodeImage] = process.argv.slice(2);
  if (kubernetesBinDir === undefined || nodeImage === undefined)
    throw new Error('usage: vm-cluster.ts <kubernetes bin dir> <node image dir>');
  const workspace = await mkdtemp(join(tmpdir(), 'constellation-vm-cluster-'));
  let nodes: UpNode[] = [];
  try {
    const up = await cli(
      workspace,
      [
        'mini',
        'up',
        '--kubernetes-bin-dir',
        kubernetesBinDir,
        '--workers',
        '0',
        '--vm-workers',
        '4',
        '--vm-tamper',
        'cmdline,initrd,kernel',
        '--node-image',
        nodeImage,
        '--output',
        'json',
      ],
      60 * 60_000,
    );
    await check('mini up with VM workers finishes', () => {
      expect(up.code === 0, `exit ${String(up.code)}: ${up.stderr.split('\n').slice(-4).join(' | ')}`);
      nodes = (JSON.parse(up.stdout) as { nodes: UpNode[] }).nodes;
    });
    const node = (name: string): UpNode | undefined => nodes.find((n) => n.name === name);
    const honest = 'vm-worker-4';
    await check('the honest VM worker joins and is Ready, its measurements matching the image', () => {
      const vm = node(honest);
      expect(vm?.ready === true, `${honest}: ${JSON.stringify(vm)}`);
      expect(vm?.attestation === 'measurements match', `${honest}: ${vm?.attestation ?? 'missing'}`);
    });
    const refusal = (name: string, pcrs: string, what: string): Promise<void> =>
      check(`a VM whose ${what} changed is refused, the refusal naming the event in PCR ${pcrs}`, () => {
        const vm = node(name);
        expect(vm?.ready === false, `${name} joined: ${JSON.stringify(vm)}`);
        const pattern = new RegExp(
          `attestation rejected: event policy not satisfied: \\S+ digest sha256:[0-9a-f]{64} is not allowed in PCR (${pcrs})`,
        );
        expect(pattern.test(vm?.attestation ?? ''), `${name}: ${vm?.attestation ?? 'missing'}`);
      });
    // Any change inside the UKI changes its Authenticode digest, which the firmware measures into
    // PCR 4 first: the refusal names that event (the UKI's EV_EFI_BOOT_SERVICES_APPLICATION), seen
    // on 2026-11-29 for all three; PCRs 9 and 11 differ too, further down the log.
    await refusal('vm-worker-1', '4|9|11', 'kernel command line');
    await refusal('vm-worker-2', '4|9|11', 'initrd');
    await refusal('vm-worker-3', '4|11', 'kernel');
    await check('constellation verify attests the VM: every PCR ok, the event log replays', async () => {
      const ip = node(honest)?.ip ?? '';
      const verify = await cli(workspace, ['verify', '--node', ip], 120_000);
      expect(verify.code === 0, `exit ${String(verify.code)}: ${verify.stderr}`);
      expect(/PCR 11 {2}ok/.test(verify.stdout) && /PCR {2}4 {2}ok/.test(verify.stdout), verify.stdout);
      expect(/event log: \d+ events, replayed to the quote/.test(verify.stdout), verify.stdout);
    });
    await check('the VM keeps its state on the state disk, mapped with dm-crypt', () =>
      checkStateDisk(workspace, honest),
    );
    await check(
      'mini reboot of the VM: it rejoins with the key from its rejoin ticket, its state disk mapped, and its Node is Ready again',
      () => checkRebootRejoins(workspace, honest),
    );
  } finally {
    const down = await cli(workspace, ['mini', 'down'], 10 * 60_000).catch((error: unknown) => ({
      code: -1,
      stdout: '',
      stderr: String(error),
    }));
    await check('mini down leaves no QEMU, no swtpm and no tap of the cluster behind', async () => {
      expect(down.code === 0, `exit ${String(down.code)}: ${down.stderr}`);
      const left = (await pgrep(workspace)).trim();
      expect(left === '', `still running: ${left}`);
    });
    await rm(workspace, { recursive: true, force: true });
  }
}

await main().catch((error: unknown) => {
  results.push({ name: 'the run itself', error: error instanceof Error ? error.message : String(error) });
});
for (const result of results) console.log(`${result.error === undefined ? 'PASS' : 'FAIL'} ${result.name}`);
const failed = results.filter((r) => r.error !== undefined).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
