// Builds the container images mini's nodes run, from the built Kubernetes programs, without a
// registry (see USAGE).
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { imagesDirBeside } from '@constellation/kubernetes-programs';
import type { ImageArchive, ImagesManifest } from '@constellation/kubernetes-programs';
import {
  fail,
  formatSeconds,
  goVersion,
  buildInWorkDirectory,
  parseBuildArgs,
  progressLog,
  recipeHash,
  runBuildStep,
  withProgress,
} from './cached-build.js';
import { kubernetesLdflags, pinnedRelease, repinnedGoMod } from './kubernetes-release.js';
import { buildImage, buildahStorage } from './oci-image.js';

const USAGE = `
Builds the container images mini's nodes run, from the built Kubernetes programs, without a
registry: the control plane's (kube-apiserver, kube-controller-manager, kube-scheduler, etcd),
kubeadm's add-ons (kube-proxy with Debian's \`nft\` for its nftables proxier, and CoreDNS, both
built here from the Go module proxy), the pod sandbox (pause, a small program of ours), and a
busybox image for trying pods. Each is an OCI archive that a node imports with \`ctr -n k8s.io
images import\`, named exactly as \`kubeadm config images list\` names it, so kubeadm's manifests
find it.

  node tools/kubernetes/images.mjs                  build what is missing, print the images directory
  node tools/kubernetes/images.mjs --print-dir      print it; exit 3 when the images are not built
  node tools/kubernetes/images.mjs --rebuild        build them again

Needs the programs (node tools/kubernetes/build.mjs), Go, buildah, busybox-static and nftables
(tools/dev/ensure-deps.sh).
`;

/** Raise to rebuild everywhere when the images change in a way the data below does not show. */
const RECIPE_VERSION = 2;

/** The busybox of Debian's busybox-static: a shell and the usual tools in one static program. */
const BUSYBOX = '/bin/busybox';
/** The image for trying pods on mini (`kubectl run --image=… --image-pull-policy=Never`). */
const BUSYBOX_IMAGE = 'localhost/constellation/busybox:mini';
/** Debian's nft (package nftables): kube-proxy's nftables proxier runs it to load its rules. */
const NFT = '/usr/sbin/nft';
/** What nft reads besides its libraries: protocol and service names (`tcp`, `udp`) in rules. */
const NFT_FILES = ['/etc/protocols', '/etc/services'];
/** A cold build on 2 cores, for the progress line (a warm Go build cache makes both quick). */
const ADD_ON_SECONDS = { 'kube-proxy': 60, coredns: 200 } as const;
/** Other recipes' images kept beside the programs (each about 300 MB). */
const KEPT_OTHER_RECIPES = 2;
/** Where kubeadm's manifests run each program from: /usr/local/bin/<name>, CoreDNS at /coredns. */
const PROGRAM_DIR = '/usr/local/bin';

const log = progressLog('images');

/** A file of an image: copied from `source`, or a symbolic link to `linkTo`; at `target` in the image. */
type ImageFile = { source: string; target: string } | { linkTo: string; target: string };

interface PlannedImage {
  reference: string;
  files: ImageFile[];
  entrypoint: string | undefined;
}

function programsDir(): string {
  const build = join(import.meta.dirname, 'build.mjs');
  const result = spawnSync(process.execPath, [build, '--print-bin-dir'], { encoding: 'utf8' });
  if (result.status !== 0) fail(result.stderr.trim() || 'the Kubernetes programs are not built');
  return result.stdout.trim();
}

/** What kubeadm deploys for this release: name → image, from `kubeadm config images list`. */
function kubeadmImages(bin: string, release: string): Map<string, string> {
  const listing = spawnSync(join(bin, 'kubeadm'), ['config', 'images', 'list', `--kubernetes-version=${release}`], {
    encoding: 'utf8',
  });
  if (listing.status !== 0) fail(`kubeadm config images list failed: ${listing.stderr.trim()}`);
  const images = new Map<string, string>();
  for (const image of listing.stdout.trim().split('\n')) {
    const name = /\/([^/:]+):[^/]+$/.exec(image)?.[1];
    if (name !== undefined) images.set(name, image);
  }
  return images;
}

function recipeOf(bin: string, release: string): string {
  const here = import.meta.dirname;
  const recipe = {
    recipeVersion: RECIPE_VERSION,
    release,
    go: goVersion("the nodes' images"),
    busyboxImage: BUSYBOX_IMAGE,
    nftFiles: NFT_FILES,
    programDir: PROGRAM_DIR,
    ldflags: kubernetesLdflags(release),
  };
  const files = [join(here, 'pause', 'main.go'), join(here, 'pause', 'go.mod'), join(bin, 'release.json')];
  for (const module of ['k8s', 'coredns']) files.push(join(here, module, 'go.mod'), join(here, module, 'go.sum'));
  // Debian's nft goes into the kube-proxy image: a changed package builds the images again.
  if (existsSync(NFT)) files.push(NFT);
  return recipeHash(recipe, files);
}

/**
 * A copy of the Kubernetes module (tools/kubernetes/k8s) to build kube-proxy in: its go.sum lacks
 * the packages only kube-proxy imports (knftables, netlink, ipvs), whose sums `-mod=mod` adds to the
 * copy (checked against the checksum database), and the committed module stays as build.ts pins
 * it. Another release than the pinned one is re-pinned as build.ts does.
 */
function kubernetesModuleCopy(work: string, release: string): string {
  const committed = join(import.meta.dirname, 'k8s');
  const copy = join(work, 'modules', 'k8s');
  mkdirSync(copy, { recursive: true });
  if (release === pinnedRelease()) {
    copyFileSync(join(committed, 'go.mod'), join(copy, 'go.mod'));
    copyFileSync(join(committed, 'go.sum'), join(copy, 'go.sum'));
  } else {
    writeFileSync(join(copy, 'go.mod'), repinnedGoMod(release));
  }
  return copy;
}

/** `go build` of one add-on program, static, with progress (a cold CoreDNS build takes minutes). */
async function goBuild(name: keyof typeof ADD_ON_SECONDS, cwd: string, args: string[], goflags: string): Promise<void> {
  await withProgress(log, `${name}: go build`, ADD_ON_SECONDS[name], undefined, () =>
    runBuildStep('go', ['build', '-trimpath', ...args], {
      cwd,
      env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: `${goflags} -buildvcs=false` },
    }),
  );
}

/** kube-proxy, from the Kubernetes module at the programs' release, static like build.ts's. */
async function buildKubeProxy(work: string, release: string): Promise<string> {
  const output = join(work, 'kube-proxy');
  const args = ['-tags', 'selinux,notest', '-ldflags', kubernetesLdflags(release), '-o', output];
  await goBuild(
    'kube-proxy',
    kubernetesModuleCopy(work, release),
    [...args, 'k8s.io/kubernetes/cmd/kube-proxy'],
    '-mod=mod',
  );
  return output;
}

/**
 * CoreDNS, from tools/kubernetes/coredns (go.mod and go.sum pin the release the pinned kubeadm
 * deploys), static. Another release's kubeadm may name another CoreDNS: the pinned one is built
 * and named as that kubeadm names it, and the log says so.
 */
async function buildCoreDns(work: string, reference: string): Promise<string> {
  const module = join(import.meta.dirname, 'coredns');
  const goMod = readFileSync(join(module, 'go.mod'), 'utf8');
  const pinned = /^\s*(?:require\s+)?github\.com\/coredns\/coredns (v\S+)/m.exec(goMod)?.[1];
  if (pinned === undefined)
    throw new Error('tools/kubernetes/coredns/go.mod does not require github.com/coredns/coredns');
  const wanted = reference.slice(reference.lastIndexOf(':') + 1);
  if (pinned !== wanted)
    log(
      `warning: kubeadm deploys ${reference}; the image carries CoreDNS ${pinned} (tools/kubernetes/coredns) under that name`,
    );
  const output = join(work, 'coredns');
  await goBuild('coredns', module, ['-ldflags', '-s -w', '-o', output, 'github.com/coredns/coredns'], '-mod=readonly');
  return output;
}

/**
 * Debian's nft with what it loads: the shared libraries and the dynamic loader ldd names (copied
 * to the paths ldd gives, from the files behind them), and the name tables it reads.
 */
function nftFiles(): ImageFile[] {
  if (!existsSync(NFT))
    throw new Error(`${NFT} is missing (Debian package nftables; tools/dev/ensure-deps.sh installs it)`);
  const ldd = spawnSync('ldd', [NFT], { encoding: 'utf8' });
  if (ldd.status !== 0) throw new Error(`ldd ${NFT} failed: ${ldd.stderr.trim()}`);
  const files: ImageFile[] = [{ source: NFT, target: NFT }];
  for (const line of ldd.stdout.split('\n')) {
    const path = /(?:=>\s*)?(\/\S+)\s+\(0x[0-9a-f]+\)/.exec(line)?.[1];
    if (path === undefined) {
      if (line.includes('not found')) throw new Error(`ldd ${NFT}: ${line.trim()}`);
      continue;
    }
    files.push({ source: realpathSync(path), target: path });
  }
  for (const file of NFT_FILES) {
    if (!existsSync(file)) throw new Error(`${file} is missing (Debian package netbase): nft reads it`);
    files.push({ source: file, target: file });
  }
  return files;
}

function busyboxFiles(): ImageFile[] {
  const applets = spawnSync(BUSYBOX, ['--list'], { encoding: 'utf8' });
  if (applets.status !== 0) throw new Error(`${BUSYBOX} is missing (Debian package busybox-static)`);
  const files: ImageFile[] = [{ source: BUSYBOX, target: '/bin/busybox' }];
  for (const applet of applets.stdout.trim().split('\n'))
    if (applet !== 'busybox') files.push({ linkTo: 'busybox', target: `/bin/${applet}` });
  return files;
}

/** Lays `files` out in a fresh directory, the image's root file system. */
function rootfsOf(dir: string, files: readonly ImageFile[]): string {
  mkdirSync(dir, { recursive: true });
  for (const file of files) {
    const destination = join(dir, file.target);
    mkdirSync(dirname(destination), { recursive: true });
    if ('linkTo' in file) symlinkSync(file.linkTo, destination);
    else copyFileSync(file.source, destination);
  }
  return dir;
}

/** Each image kubeadm names, and mini's busybox, with the files it carries. */
async function planImages(bin: string, release: string, work: string): Promise<PlannedImage[]> {
  const pause = join(work, 'pause');
  await runBuildStep('go', ['build', '-trimpath', '-ldflags', '-s -w', '-o', pause, '.'], {
    cwd: join(import.meta.dirname, 'pause'),
    env: { ...process.env, CGO_ENABLED: '0' },
  });
  const plan: PlannedImage[] = [];
  for (const [name, reference] of kubeadmImages(bin, release)) {
    if (name === 'kube-proxy') {
      // kubeadm's DaemonSet runs /usr/local/bin/kube-proxy; its nftables proxier runs nft.
      const target = `${PROGRAM_DIR}/kube-proxy`;
      const files = [{ source: await buildKubeProxy(work, release), target }, ...nftFiles()];
      plan.push({ reference, files, entrypoint: target });
    } else if (name === 'coredns') {
      // kubeadm's Deployment gives only arguments: the entrypoint is the program, where CoreDNS's own image has it.
      plan.push({
        reference,
        files: [{ source: await buildCoreDns(work, reference), target: '/coredns' }],
        entrypoint: '/coredns',
      });
    } else {
      const program = name === 'pause' ? pause : join(bin, name);
      if (!existsSync(program)) throw new Error(`kubeadm lists ${reference}, and no program ${name} was built for it`);
      const target = `${PROGRAM_DIR}/${name}`;
      plan.push({ reference, files: [{ source: program, target }], entrypoint: target });
    }
  }
  plan.push({ reference: BUSYBOX_IMAGE, files: busyboxFiles(), entrypoint: undefined });
  return plan;
}

async function build(bin: string, dir: string, release: string, recipe: string): Promise<void> {
  const started = Date.now();
  log(`building the node images for Kubernetes ${release} into ${dir} (about 30 s; the first time about 5 min more)`);
  let count = 0;
  await buildInWorkDirectory(dir, async (work) => {
    const out = join(work, 'out');
    const plan = await planImages(bin, release, work);
    const storage = buildahStorage(work);
    const built: ImageArchive[] = [];
    for (const [i, image] of plan.entries()) {
      const imageStarted = Date.now();
      const rootfs = rootfsOf(join(work, 'rootfs', String(i)), image.files);
      const config = image.entrypoint === undefined ? [] : [`ENTRYPOINT ${JSON.stringify([image.entrypoint])}`];
      const archive = await buildImage(storage, join(work, 'scratch'), out, {
        reference: image.reference,
        rootfs,
        config,
      });
      built.push({ reference: image.reference, archive });
      log(
        `[${String(i + 1)}/${String(plan.length)}] ${image.reference} (${formatSeconds((Date.now() - imageStarted) / 1000)})`,
      );
    }
    // Written last: a directory with an images.json of this recipe holds every image.
    const manifest: ImagesManifest = { release, recipe, images: built };
    writeFileSync(join(out, 'images.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    count = built.length;
    return out;
  });
  log(`${String(count)} images built in ${formatSeconds((Date.now() - started) / 1000)}`);
}

function builtRecipe(dir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(dir, 'images.json'), 'utf8')) as Partial<ImagesManifest>).recipe;
  } catch {
    return undefined;
  }
}

/**
 * Points `link` (the `images` directory readers look for beside the programs) at `dir`, replacing
 * it in one rename: each checkout's recipe keeps a directory of its own, and the one that ran last
 * is the one readers see.
 */
function pointImagesLink(link: string, dir: string): void {
  const current = lstatSync(link, { throwIfNoEntry: false });
  if (current?.isSymbolicLink() === true && readlinkSync(link) === basename(dir)) return;
  // The layout before images were keyed by recipe: a directory of its own.
  if (current?.isDirectory() === true) rmSync(link, { recursive: true, force: true });
  const staged = `${link}.link-${String(process.pid)}`;
  rmSync(staged, { force: true });
  symlinkSync(basename(dir), staged);
  renameSync(staged, link);
}

/** Removes other recipes' images beside `keep`, but for the newest few (other checkouts may use them). */
function pruneOtherImages(parent: string, keep: string): void {
  const others = readdirSync(parent, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name.startsWith('images-') && entry.name !== basename(keep))
    .filter((entry) => !entry.name.includes('.partial-'))
    .map((entry) => ({ path: join(parent, entry.name), mtimeMs: statSync(join(parent, entry.name)).mtimeMs }))
    .sort((a, b) => b.mtimeMs - a.mtimeMs);
  for (const old of others.slice(KEPT_OTHER_RECIPES)) rmSync(old.path, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const args = parseBuildArgs(process.argv.slice(2), USAGE);
  const bin = programsDir();
  const { release } = JSON.parse(readFileSync(join(bin, 'release.json'), 'utf8')) as { release: string };
  // Beside the programs, so that whoever has the programs' directory finds the images: in a
  // directory per recipe, which `images` points to.
  const recipe = recipeOf(bin, release);
  const dir = join(dirname(bin), `images-${recipe}`);
  const complete = builtRecipe(dir) === recipe;
  if (args.printDir) {
    if (!complete) {
      process.stderr.write('the node images are not built yet: run node tools/kubernetes/images.mjs\n');
      process.exit(3);
    }
  } else {
    if (args.rebuild || !complete) await build(bin, dir, release, recipe);
    pointImagesLink(imagesDirBeside(bin), dir);
    pruneOtherImages(dirname(bin), dir);
  }
  process.stdout.write(`${dir}\n`);
}

await main();
