#!/usr/bin/env node
// Builds the container images mini's nodes run, from the built Kubernetes programs, without a
// registry: the control plane's (kube-apiserver, kube-controller-manager, kube-scheduler, etcd),
// kubeadm's add-ons (kube-proxy with Debian's `nft` for its nftables proxier, and CoreDNS, both
// built here from the Go module proxy), the pod sandbox (pause, a small program of ours), and a
// busybox image for trying pods. Each is an OCI archive that a node imports with `ctr -n k8s.io
// images import`, named exactly as `kubeadm config images list` names it, so kubeadm's manifests
// find it.
//
//   node tools/kubernetes/images.mjs                  build what is missing, print the images directory
//   node tools/kubernetes/images.mjs --print-dir      print it; exit 3 when the images are not built
//   node tools/kubernetes/images.mjs --rebuild        build them again
//
// Needs the programs (tools/kubernetes/build.mjs), Go, buildah, busybox-static and nftables
// (tools/dev/ensure-deps.sh).
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SCRIPT_HELPERS_FILE, formatSeconds, run } from './script-helpers.mjs';
import { VERSION_STAMP_FILE, kubernetesLdflags } from './version-stamp.mjs';

const here = dirname(fileURLToPath(import.meta.url));
/** The busybox of Debian's busybox-static: a shell and the usual tools in one static program. */
const BUSYBOX = '/bin/busybox';
/** The image for trying pods on mini (`kubectl run --image=… --image-pull-policy=Never`). */
export const BUSYBOX_IMAGE = 'localhost/constellation/busybox:mini';
/** Debian's nft (package nftables): kube-proxy's nftables proxier runs it to load its rules. */
const NFT = '/usr/sbin/nft';
/** What nft reads besides its libraries: protocol and service names (`tcp`, `udp`) in rules. */
const NFT_FILES = ['/etc/protocols', '/etc/services'];
/** A cold build on 2 cores, for the progress line (a warm Go build cache makes both quick). */
const ADD_ON_SECONDS = { 'kube-proxy': 60, coredns: 200 };

function fail(message) {
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
}

function log(line) {
  process.stderr.write(`[images] ${line}\n`);
}

function binDir() {
  const result = spawnSync(process.execPath, [join(here, 'build.mjs'), '--print-bin-dir'], { encoding: 'utf8' });
  if (result.status !== 0) fail(result.stderr.trim() || 'the Kubernetes programs are not built');
  return result.stdout.trim();
}

/** What kubeadm deploys for this release: name → image, from `kubeadm config images list`. */
function kubeadmImages(bin, release) {
  const result = spawnSync(join(bin, 'kubeadm'), ['config', 'images', 'list', `--kubernetes-version=${release}`], {
    encoding: 'utf8',
  });
  if (result.status !== 0) fail(`kubeadm config images list failed: ${result.stderr.trim()}`);
  const images = {};
  for (const image of result.stdout.trim().split('\n')) {
    const name = /\/([^/:]+):[^/]+$/.exec(image)?.[1];
    if (name !== undefined) images[name] = image;
  }
  return images;
}

function imagesHash(bin, release) {
  const hash = createHash('sha256').update(`${release}\n${bin}\n`);
  const recipe = [
    fileURLToPath(import.meta.url),
    SCRIPT_HELPERS_FILE,
    VERSION_STAMP_FILE,
    join(here, 'pause', 'main.go'),
    join(here, 'pause', 'go.mod'),
  ];
  for (const module of ['k8s', 'coredns']) recipe.push(join(here, module, 'go.mod'), join(here, module, 'go.sum'));
  for (const file of recipe) hash.update(readFileSync(file));
  hash.update(readFileSync(join(bin, 'release.json')));
  // Debian's nft goes into the kube-proxy image: a changed package builds the images again.
  if (existsSync(NFT)) hash.update(readFileSync(NFT));
  return hash.digest('hex').slice(0, 12);
}

/**
 * A copy of the Kubernetes module (tools/kubernetes/k8s) to build kube-proxy in: its go.sum lacks
 * the packages only kube-proxy imports (knftables, netlink, ipvs), whose sums `-mod=mod` adds to the
 * copy (checked against the checksum database), and the committed module stays as build.mjs pins
 * it. Another release than the pinned one is re-pinned as build.mjs does.
 */
function kubernetesModuleCopy(work, release) {
  const target = join(work, 'modules', 'k8s');
  mkdirSync(target, { recursive: true });
  let goMod = readFileSync(join(here, 'k8s', 'go.mod'), 'utf8');
  const pinned = /^require k8s\.io\/kubernetes (v\S+)/m.exec(goMod)?.[1];
  if (pinned === release) {
    copyFileSync(join(here, 'k8s', 'go.sum'), join(target, 'go.sum'));
  } else {
    const staging = release.replace(/^v1\./, 'v0.');
    goMod = goMod
      .replace(/^(require k8s\.io\/kubernetes) v\S+/m, `$1 ${release}`)
      .replace(/^(\tk8s\.io\/\S+ => k8s\.io\/\S+) v\S+$/gm, `$1 ${staging}`)
      .replace(/^require \([\s\S]*?^\)\n/m, '');
  }
  writeFileSync(join(target, 'go.mod'), goMod);
  return target;
}

/** `go build` of one add-on program, with a progress line every 30 s (a cold CoreDNS build takes minutes). */
async function goBuild(name, cwd, args, goflags) {
  const started = Date.now();
  log(`${name}: go build (about ${formatSeconds(ADD_ON_SECONDS[name])} the first time, seconds after that)`);
  const tick = setInterval(() => log(`${name}: ${formatSeconds((Date.now() - started) / 1000)} so far`), 30_000);
  try {
    await run('go', ['build', '-trimpath', ...args], {
      cwd,
      env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: `${goflags} -buildvcs=false` },
    });
  } finally {
    clearInterval(tick);
  }
  log(`${name}: built in ${formatSeconds((Date.now() - started) / 1000)}`);
}

/** kube-proxy, from the Kubernetes module at the programs' release, static like build.mjs's. */
async function buildKubeProxy(work, release) {
  const output = join(work, 'kube-proxy');
  await goBuild(
    'kube-proxy',
    kubernetesModuleCopy(work, release),
    [
      '-tags',
      'selinux,notest',
      '-ldflags',
      kubernetesLdflags(release),
      '-o',
      output,
      'k8s.io/kubernetes/cmd/kube-proxy',
    ],
    '-mod=mod',
  );
  return output;
}

/**
 * CoreDNS, from tools/kubernetes/coredns (go.mod and go.sum pin the release the pinned kubeadm
 * deploys), static. Another release's kubeadm may name another CoreDNS: the pinned one is built
 * and named as that kubeadm names it, and the log says so.
 */
async function buildCoreDns(work, reference) {
  const module = readFileSync(join(here, 'coredns', 'go.mod'), 'utf8');
  const pinned = /^\s*(?:require\s+)?github\.com\/coredns\/coredns (v\S+)/m.exec(module)?.[1];
  if (pinned === undefined)
    throw new Error('tools/kubernetes/coredns/go.mod does not require github.com/coredns/coredns');
  const wanted = reference.slice(reference.lastIndexOf(':') + 1);
  if (pinned !== wanted)
    log(
      `warning: kubeadm deploys ${reference}; the image carries CoreDNS ${pinned} (tools/kubernetes/coredns) under that name`,
    );
  const output = join(work, 'coredns');
  await goBuild(
    'coredns',
    join(here, 'coredns'),
    ['-ldflags', '-s -w', '-o', output, 'github.com/coredns/coredns'],
    '-mod=readonly',
  );
  return output;
}

/**
 * Debian's nft with what it loads: the shared libraries and the dynamic loader ldd names (copied
 * to the paths ldd gives, from the files behind them), and the name tables it reads.
 */
function nftFiles() {
  if (!existsSync(NFT))
    throw new Error(`${NFT} is missing (Debian package nftables; tools/dev/ensure-deps.sh installs it)`);
  const result = spawnSync('ldd', [NFT], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`ldd ${NFT} failed: ${result.stderr.trim()}`);
  const files = [[NFT, '/usr/sbin/nft']];
  for (const line of result.stdout.split('\n')) {
    const path = /(?:=>\s*)?(\/\S+)\s+\(0x[0-9a-f]+\)/.exec(line)?.[1];
    if (path === undefined) {
      if (/not found/.test(line)) throw new Error(`ldd ${NFT}: ${line.trim()}`);
      continue;
    }
    files.push([realpathSync(path), path]);
  }
  for (const file of NFT_FILES) {
    if (!existsSync(file)) throw new Error(`${file} is missing (Debian package netbase): nft reads it`);
    files.push([file, file]);
  }
  return files;
}

/** One image: FROM scratch, the given files, PATH set; pushed to an OCI archive under `reference`. */
async function buildImage(work, storage, reference, files, entrypoint) {
  const context = join(work, reference.replace(/[^a-z0-9.-]+/gi, '_'));
  mkdirSync(join(context, 'rootfs'), { recursive: true });
  for (const [source, target] of files) {
    const destination = join(context, 'rootfs', target);
    mkdirSync(dirname(destination), { recursive: true });
    if (source.startsWith('symlink:')) symlinkSync(source.slice('symlink:'.length), destination);
    else copyFileSync(source, destination);
  }
  writeFileSync(
    join(context, 'Containerfile'),
    [
      'FROM scratch',
      'COPY rootfs/ /',
      'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      ...(entrypoint === undefined ? [] : [`ENTRYPOINT ${JSON.stringify(entrypoint)}`]),
      '',
    ].join('\n'),
  );
  await run('buildah', [
    ...storage,
    'bud',
    '--quiet',
    '--layers=false',
    // A fixed time: the same programs give the same image digests.
    '--timestamp=0',
    '--file',
    join(context, 'Containerfile'),
    '--tag',
    reference,
    context,
  ]);
  const archive = join(work, 'out', `${reference.replace(/[^a-z0-9.-]+/gi, '_')}.oci.tar`);
  mkdirSync(dirname(archive), { recursive: true });
  await run('buildah', [...storage, 'push', '--quiet', reference, `oci-archive:${archive}:${reference}`]);
  return archive;
}

function busyboxFiles() {
  const result = spawnSync(BUSYBOX, ['--list'], { encoding: 'utf8' });
  if (result.status !== 0) fail(`${BUSYBOX} is missing (Debian package busybox-static)`);
  const files = [[BUSYBOX, '/bin/busybox']];
  for (const applet of result.stdout.trim().split('\n')) {
    if (applet !== 'busybox') files.push([`symlink:busybox`, `/bin/${applet}`]);
  }
  return files;
}

async function build(bin, dir, release, recipe) {
  const started = Date.now();
  const work = `${dir}.partial-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  // A storage of its own (vfs works everywhere), removed afterwards: nothing left in the machine's.
  const storage = ['--root', join(work, 'storage'), '--runroot', join(work, 'runroot'), '--storage-driver', 'vfs'];
  const wanted = kubeadmImages(bin, release);
  log(`building the node images for Kubernetes ${release} into ${dir} (about 30 s; the first time about 5 min more)`);
  const built = [];
  try {
    const pause = join(work, 'pause');
    await run('go', ['build', '-trimpath', '-ldflags', '-s -w', '-o', pause, '.'], {
      cwd: join(here, 'pause'),
      env: { ...process.env, CGO_ENABLED: '0' },
    });
    const plan = [];
    for (const [name, reference] of Object.entries(wanted)) {
      if (name === 'kube-proxy') {
        // kubeadm's DaemonSet runs /usr/local/bin/kube-proxy; its nftables proxier runs nft.
        const program = await buildKubeProxy(work, release);
        const files = [[program, '/usr/local/bin/kube-proxy'], ...nftFiles()];
        plan.push({ reference, files, entrypoint: ['/usr/local/bin/kube-proxy'] });
        continue;
      }
      if (name === 'coredns') {
        // kubeadm's Deployment gives only arguments: the entrypoint is the program, where CoreDNS's own image has it.
        plan.push({ reference, files: [[await buildCoreDns(work, reference), '/coredns']], entrypoint: ['/coredns'] });
        continue;
      }
      const program = name === 'pause' ? pause : join(bin, name);
      if (!existsSync(program)) throw new Error(`kubeadm lists ${reference}, and no program ${name} was built for it`);
      plan.push({ reference, files: [[program, `/usr/local/bin/${name}`]], entrypoint: [`/usr/local/bin/${name}`] });
    }
    plan.push({ reference: BUSYBOX_IMAGE, files: busyboxFiles(), entrypoint: undefined });
    for (const [i, image] of plan.entries()) {
      const imageStarted = Date.now();
      const archive = await buildImage(work, storage, image.reference, image.files, image.entrypoint);
      built.push({ reference: image.reference, archive: archive.slice(work.length + 1) });
      log(`[${i + 1}/${plan.length}] ${image.reference} (${Math.round((Date.now() - imageStarted) / 1000)} s)`);
    }
  } catch (error) {
    rmSync(work, { recursive: true, force: true });
    fail(error.message);
  }
  writeFileSync(
    join(work, 'out', 'images.json'),
    `${JSON.stringify({ release, recipe, images: built.map((b) => ({ ...b, archive: b.archive.replace(/^out\//, '') })) }, null, 2)}\n`,
  );
  rmSync(dir, { recursive: true, force: true });
  renameSync(join(work, 'out'), dir);
  rmSync(work, { recursive: true, force: true });
  log(`${built.length} images built in ${Math.round((Date.now() - started) / 1000)} s`);
}

async function main() {
  const argv = process.argv.slice(2);
  for (const arg of argv)
    if (!['--rebuild', '--print-dir'].includes(arg))
      fail(`unknown argument ${arg} (expected --rebuild or --print-dir)`);
  const bin = binDir();
  const { release } = JSON.parse(readFileSync(join(bin, 'release.json'), 'utf8'));
  // Beside the programs, so that whoever has the programs' directory finds the images.
  const dir = join(dirname(bin), 'images');
  const recipe = imagesHash(bin, release);
  const complete =
    existsSync(join(dir, 'images.json')) &&
    JSON.parse(readFileSync(join(dir, 'images.json'), 'utf8')).recipe === recipe;
  if (argv.includes('--print-dir')) {
    if (!complete) {
      process.stderr.write('the node images are not built yet: run node tools/kubernetes/images.mjs\n');
      process.exit(3);
    }
  } else if (argv.includes('--rebuild') || !complete) {
    await build(bin, dir, release, recipe);
  }
  process.stdout.write(`${dir}\n`);
}

await main();
