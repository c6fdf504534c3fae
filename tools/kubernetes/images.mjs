#!/usr/bin/env node
// Builds the container images mini's nodes run, from the built Kubernetes programs, without a
// registry: the control plane's (kube-apiserver, kube-controller-manager, kube-scheduler, etcd),
// the pod sandbox (pause, a small program of ours), and a busybox image for trying pods. Each is
// an OCI archive that a node imports with `ctr -n k8s.io images import`, named exactly as
// `kubeadm config images list` names it, so kubeadm's manifests find it.
//
//   node tools/kubernetes/images.mjs                  build what is missing, print the images directory
//   node tools/kubernetes/images.mjs --print-dir      print it; exit 3 when the images are not built
//   node tools/kubernetes/images.mjs --rebuild        build them again
//
// Needs the programs (tools/kubernetes/build.mjs), buildah and busybox-static (tools/dev/ensure-deps.sh).
import { createHash } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** The busybox of Debian's busybox-static: a shell and the usual tools in one static program. */
const BUSYBOX = '/bin/busybox';
/** The image for trying pods on mini (`kubectl run --image=… --image-pull-policy=Never`). */
export const BUSYBOX_IMAGE = 'localhost/constellation/busybox:mini';
/** Images kubeadm lists that mini does not build: what each would have given. */
const NOT_BUILT = {
  'kube-proxy': 'Services by ClusterIP (mini skips the kube-proxy add-on)',
  coredns: 'cluster DNS (mini skips the CoreDNS add-on)',
};

function fail(message) {
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
}

function log(line) {
  process.stderr.write(`[images] ${line}\n`);
}

function run(command, args, options = {}) {
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
  for (const file of [fileURLToPath(import.meta.url), join(here, 'pause', 'main.go'), join(here, 'pause', 'go.mod')])
    hash.update(readFileSync(file));
  hash.update(readFileSync(join(bin, 'release.json')));
  return hash.digest('hex').slice(0, 12);
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
      'ENV PATH=/usr/local/bin:/usr/bin:/bin',
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
  log(`building the node images for Kubernetes ${release} into ${dir} (about 15 s)`);
  const pause = join(work, 'pause');
  await run('go', ['build', '-trimpath', '-ldflags', '-s -w', '-o', pause, '.'], {
    cwd: join(here, 'pause'),
    env: { ...process.env, CGO_ENABLED: '0' },
  });
  const plan = [];
  for (const [name, reference] of Object.entries(wanted)) {
    if (name in NOT_BUILT) {
      log(`${reference}: not built; without it mini has no ${NOT_BUILT[name]}`);
      continue;
    }
    const program = name === 'pause' ? pause : join(bin, name);
    if (!existsSync(program)) fail(`kubeadm lists ${reference}, and no program ${name} was built for it`);
    plan.push({ reference, files: [[program, `/usr/local/bin/${name}`]], entrypoint: [`/usr/local/bin/${name}`] });
  }
  plan.push({ reference: BUSYBOX_IMAGE, files: busyboxFiles(), entrypoint: undefined });
  const built = [];
  try {
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
