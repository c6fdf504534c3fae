#!/usr/bin/env node
// Builds the real Kubernetes programs (Kubernetes, etcd, containerd, runc) from the Go module proxy
// into a cache outside the clone, once per machine, release and recipe. Usage:
//
//   node tools/kubernetes/build.mjs                 build what is missing, print the bin directory
//   node tools/kubernetes/build.mjs --rebuild       build again even when the cache has it
//   node tools/kubernetes/build.mjs --print-bin-dir print the bin directory; exit 3 when not built
//   KUBERNETES_RELEASE=v1.36.3 node tools/kubernetes/build.mjs   another release (1.35 to 1.37)
//
// The cache directory is $CONSTELLATION_CACHE_DIR or ${XDG_CACHE_HOME:-~/.cache}/constellation.
// Its name holds the release and a hash of this recipe (this file and the Go modules beside it),
// so a fresh clone reuses a build and a changed recipe rebuilds.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const MODULES = ['k8s', 'etcd', 'containerd', 'runc'];
/** The minors this project supports; the pinned release is the newest patch of the newest. */
const SUPPORTED_MINORS = ['1.35', '1.36', '1.37'];

/** Each program: its module folder, Go package, cgo and build tags, and a cold build's duration here. */
const PROGRAMS = [
  // kube-apiserver compiles most of the shared packages, so the others after it are quick.
  { name: 'kube-apiserver', module: 'k8s', pkg: 'k8s.io/kubernetes/cmd/kube-apiserver', seconds: 420 },
  {
    name: 'kube-controller-manager',
    module: 'k8s',
    pkg: 'k8s.io/kubernetes/cmd/kube-controller-manager',
    seconds: 135,
  },
  { name: 'kube-scheduler', module: 'k8s', pkg: 'k8s.io/kubernetes/cmd/kube-scheduler', seconds: 10 },
  { name: 'kubeadm', module: 'k8s', pkg: 'k8s.io/kubernetes/cmd/kubeadm', seconds: 25 },
  { name: 'kubelet', module: 'k8s', pkg: 'k8s.io/kubernetes/cmd/kubelet', seconds: 35 },
  { name: 'kubectl', module: 'k8s', pkg: 'k8s.io/kubernetes/cmd/kubectl', seconds: 25 },
  { name: 'etcd', module: 'etcd', pkg: 'go.etcd.io/etcd/server/v3', seconds: 20 },
  { name: 'containerd', module: 'containerd', pkg: 'github.com/containerd/containerd/v2/cmd/containerd', seconds: 90 },
  {
    name: 'containerd-shim-runc-v2',
    module: 'containerd',
    pkg: 'github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2',
    seconds: 10,
  },
  { name: 'ctr', module: 'containerd', pkg: 'github.com/containerd/containerd/v2/cmd/ctr', seconds: 10 },
  { name: 'runc', module: 'runc', pkg: 'github.com/opencontainers/runc', seconds: 15, cgo: true, tags: 'seccomp' },
];

/** Raise to rebuild everywhere when the build changes in a way PROGRAMS and ldflags do not show. */
const RECIPE_VERSION = 1;

function fail(message) {
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const options = { rebuild: false, printBinDir: false, help: false };
  for (const arg of argv) {
    if (arg === '--rebuild') options.rebuild = true;
    else if (arg === '--print-bin-dir') options.printBinDir = true;
    else if (arg === '--help' || arg === '-h') options.help = true;
    else fail(`unknown argument ${arg} (expected --rebuild, --print-bin-dir or --help)`);
  }
  return options;
}

/** The release the committed Go module pins (k8s/go.mod's require line). */
function pinnedRelease() {
  const match = /require k8s\.io\/kubernetes (v\d+\.\d+\.\d+)/.exec(readFileSync(join(here, 'k8s', 'go.mod'), 'utf8'));
  if (match?.[1] === undefined) fail('tools/kubernetes/k8s/go.mod does not require k8s.io/kubernetes');
  return match[1];
}

function requestedRelease(pinned) {
  const release = process.env.KUBERNETES_RELEASE ?? pinned;
  const match = /^v(\d+\.\d+)\.\d+$/.exec(release);
  if (match?.[1] === undefined) fail(`KUBERNETES_RELEASE must look like v1.37.2, got "${release}"`);
  if (!SUPPORTED_MINORS.includes(match[1])) {
    fail(`KUBERNETES_RELEASE ${release} is not supported; supported minors: ${SUPPORTED_MINORS.join(', ')}`);
  }
  return release;
}

function goVersion() {
  const result = spawnSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' });
  if (result.error !== undefined || result.status !== 0) {
    fail('Go is needed to build the Kubernetes programs (go 1.26 or newer on PATH): `go env GOVERSION` failed');
  }
  return result.stdout.trim();
}

function recipeHash(release, go) {
  const hash = createHash('sha256')
    .update(`${release}\n${go}\n`)
    .update(readFileSync(fileURLToPath(import.meta.url)));
  for (const module of MODULES) {
    for (const file of ['go.mod', 'go.sum']) hash.update(readFileSync(join(here, module, file)));
  }
  return hash.digest('hex').slice(0, 12);
}

function cacheRoot() {
  if (process.env.CONSTELLATION_CACHE_DIR) return process.env.CONSTELLATION_CACHE_DIR;
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'constellation');
}

function ldflags(release) {
  const [major, minor] = release.slice(1).split('.');
  const flags = ['-s', '-w'];
  for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    flags.push(
      `-X ${pkg}.gitVersion=${release}`,
      `-X ${pkg}.gitMajor=${major}`,
      `-X ${pkg}.gitMinor=${minor}`,
      `-X ${pkg}.gitTreeState=clean`,
      `-X ${pkg}.gitCommit=${'0'.repeat(40)}`,
      `-X ${pkg}.buildDate=1970-01-01T00:00:00Z`,
    );
  }
  return flags.join(' ');
}

function formatSeconds(s) {
  return s >= 60 ? `${Math.floor(s / 60)} min ${String(Math.round(s % 60)).padStart(2, '0')} s` : `${Math.round(s)} s`;
}

function run(command, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk) => {
      output = (output + chunk.toString()).slice(-8000);
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

/** A module folder for another release than the committed one: the same recipe, re-pinned. */
async function repinnedModule(module, release, workDir) {
  const source = join(here, module);
  if (module !== 'k8s' || release === pinnedRelease()) return source;
  const target = join(workDir, 'modules', module);
  mkdirSync(target, { recursive: true });
  const staging = release.replace(/^v1\./, 'v0.');
  const goMod = readFileSync(join(source, 'go.mod'), 'utf8')
    .replace(/^(require k8s\.io\/kubernetes) v\S+/m, `$1 ${release}`)
    .replace(/^(\tk8s\.io\/\S+ => k8s\.io\/\S+) v\S+$/gm, `$1 ${staging}`)
    .replace(/^require \([\s\S]*?^\)\n/m, '');
  writeFileSync(join(target, 'go.mod'), goMod);
  log(`re-pinning the Kubernetes module to ${release} (go mod tidy)`);
  await run('go', ['mod', 'tidy'], { cwd: target });
  return target;
}

function log(line) {
  process.stderr.write(`[kubernetes] ${line}\n`);
}

async function build(release, binDir) {
  const workDir = `${binDir}.partial-${process.pid}`;
  // A build cut off earlier left its work here; a build running now has a live pid in its name.
  for (const entry of existsSync(dirname(binDir)) ? readdirSync(dirname(binDir)) : []) {
    const pid = Number(/^bin\.partial-(\d+)$/.exec(entry)?.[1]);
    if (pid > 0 && !isAlive(pid)) rmSync(join(dirname(binDir), entry), { recursive: true, force: true });
  }
  mkdirSync(join(workDir, 'bin'), { recursive: true });
  const total = PROGRAMS.reduce((sum, p) => sum + p.seconds, 0);
  log(
    `building ${PROGRAMS.length} programs for Kubernetes ${release} from the Go module proxy into ${binDir}` +
      ` (about ${formatSeconds(total)} on 2 cores the first time; later runs reuse Go's build cache)`,
  );
  const modules = {};
  for (const module of MODULES) modules[module] = await repinnedModule(module, release, workDir);
  const started = Date.now();
  for (const [i, program] of PROGRAMS.entries()) {
    const programStarted = Date.now();
    const label = `[${i + 1}/${PROGRAMS.length}] ${program.name}`;
    log(`${label}: building (about ${formatSeconds(program.seconds)} cold)`);
    const tick = setInterval(() => {
      log(
        `${label}: ${formatSeconds((Date.now() - programStarted) / 1000)} so far, ` +
          `${formatSeconds((Date.now() - started) / 1000)} of about ${formatSeconds(total)} in all`,
      );
    }, 30_000);
    const args = ['build', '-trimpath', '-o', join(workDir, 'bin', program.name)];
    args.push('-tags', ['selinux', 'notest', program.tags].filter(Boolean).join(','));
    args.push('-ldflags', ldflags(release), program.pkg);
    try {
      await run('go', args, {
        cwd: modules[program.module],
        env: { ...process.env, CGO_ENABLED: program.cgo ? '1' : '0', GOFLAGS: '-mod=mod -buildvcs=false' },
      });
    } catch (error) {
      rmSync(workDir, { recursive: true, force: true });
      fail(`${program.name} did not build: ${error.message}`);
    } finally {
      clearInterval(tick);
    }
    log(`${label}: done in ${formatSeconds((Date.now() - programStarted) / 1000)}`);
  }
  writeFileSync(
    join(workDir, 'bin', 'release.json'),
    `${JSON.stringify({ release, programs: PROGRAMS.map((p) => p.name), builtAt: new Date().toISOString() }, null, 2)}\n`,
  );
  rmSync(binDir, { recursive: true, force: true });
  mkdirSync(dirname(binDir), { recursive: true });
  renameSync(join(workDir, 'bin'), binDir);
  rmSync(workDir, { recursive: true, force: true });
  log(`all ${PROGRAMS.length} programs built in ${formatSeconds((Date.now() - started) / 1000)}`);
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function isComplete(binDir) {
  return existsSync(join(binDir, 'release.json')) && PROGRAMS.every((p) => existsSync(join(binDir, p.name)));
}

/**
 * Removes earlier recipes' builds of the same release (each holds about 650 MB of programs) and
 * builds left half-done; other releases' builds stay.
 */
function pruneOldBuilds(kubernetesDir, keep, release) {
  if (!existsSync(kubernetesDir)) return;
  for (const entry of readdirSync(kubernetesDir, { withFileTypes: true })) {
    if (entry.isDirectory() && entry.name !== keep && entry.name.startsWith(`${release}-`)) {
      rmSync(join(kubernetesDir, entry.name), { recursive: true, force: true });
    }
  }
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  if (options.help) {
    process.stdout.write(
      readFileSync(fileURLToPath(import.meta.url), 'utf8')
        .split('\n')
        .slice(1, 12)
        .map((l) => l.replace(/^\/\/ ?/, ''))
        .join('\n') + '\n',
    );
    return;
  }
  const release = requestedRelease(pinnedRelease());
  const kubernetesDir = join(cacheRoot(), 'kubernetes');
  const name = `${release}-${recipeHash(release, goVersion())}`;
  const binDir = join(kubernetesDir, name, 'bin');
  if (options.printBinDir) {
    if (!isComplete(binDir)) {
      process.stderr.write(
        `the Kubernetes programs for ${release} are not built yet: run node tools/kubernetes/build.mjs\n`,
      );
      process.exit(3);
    }
    process.stdout.write(`${binDir}\n`);
    return;
  }
  if (options.rebuild || !isComplete(binDir)) {
    pruneOldBuilds(kubernetesDir, name, release);
    await build(release, binDir);
  }
  process.stdout.write(`${binDir}\n`);
}

await main();
