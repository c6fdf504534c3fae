// Builds the upstream Kubernetes conformance suite and the test images it needs, into a cache
// outside the clone, once per machine, release and recipe (USAGE below says what and where).
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { constellationCacheDir } from '@constellation/files';
import {
  fail,
  formatSeconds,
  goVersion,
  buildInWorkDirectory,
  parseBuildArgs,
  progressLog,
  pruneOtherRecipes,
  recipeHash,
  runBuildStep,
  withProgress,
} from './cached-build.js';
import type { Overall } from './cached-build.js';
import { CONFORMANCE_BUILD_COMMAND, conformanceSuiteLayout } from './conformance-suite.js';
import type {
  AlpineRootfsSource,
  BuiltTestImage,
  ConformanceImagesManifest,
  NotBuiltTestImage,
} from './conformance-suite.js';
import { kubernetesLdflags } from './kubernetes-release.js';
import { buildImage, buildahStorage } from './oci-image.js';

const USAGE = `
Builds what the upstream Kubernetes conformance suite needs to run against mini, from the Go
module proxy and Debian's packages, into a cache outside the clone, once per machine, release
and recipe (\`npm run conformance\` runs it first):

  bin/     e2e.test (k8s.io/kubernetes/test/e2e), the ginkgo CLI of the version e2e requires,
           agnhost, nnp (nonewprivs) and sample-apiserver
  images/  the test images the conformance specs use, as OCI archives named exactly as
           test/utils/image/manifest.go names them, with images.json (built and not built)

  node tools/kubernetes/conformance-build.mjs              build what is missing, print the directory
  node tools/kubernetes/conformance-build.mjs --print-dir  print it; exit 3 when not built
  node tools/kubernetes/conformance-build.mjs --rebuild    build everything again

The release is the one tools/kubernetes/e2e/go.mod pins (the programs' release). The directory
is $CONSTELLATION_CACHE_DIR (default \${XDG_CACHE_HOME:-~/.cache}/constellation)/conformance/
<release>-<hash of the recipe: the tables in tools/kubernetes/conformance-build.ts and the e2e
module's go.mod and go.sum>. Needs Go, buildah, gcc, make, bzip2 and apt (Debian).
`;

/**
 * Part of the recipe. Raise it to rebuild everywhere when what is built changes in a way the
 * recipe's data (the tables below, the e2e module's go.mod and go.sum) does not show: the code
 * that fills an image's root filesystem, or how oci-image.ts's buildImage makes an image.
 */
const RECIPE_VERSION = 2;

/** The Go module the suite and the test programs are built in (it pins the release). */
const E2E_MODULE_DIR = join(import.meta.dirname, 'e2e');

const log = progressLog('conformance-build');

const E2E = 'registry.k8s.io/e2e-test-images';
/** The references manifest.go gives the images built here (checked against `e2e.test --list-images`). */
const REF = {
  agnhost: `${E2E}/agnhost:2.66.1`,
  agnhostPrev: `${E2E}/agnhost:2.55`,
  busybox: `${E2E}/busybox:1.37.0-2`,
  glibcDns: `${E2E}/glibc-dns-testing:2.1.1`,
  kitten: `${E2E}/kitten:1.8`,
  nautilus: `${E2E}/nautilus:1.8`,
  nginx: `${E2E}/nginx:1.27.0-2`,
  nginxNew: `${E2E}/nginx:1.28.0-2`,
  nonewprivs: `${E2E}/nonewprivs:1.4`,
  nonroot: `${E2E}/nonroot:1.5`,
  sampleApiserver: `${E2E}/sample-apiserver:1.29.2`,
};

/**
 * Images the suite names that are not built here, and why. The pause and etcd images are mini's
 * own (tools/kubernetes/images.mjs builds them under the same names); the conformance runner
 * imports them on every node from there.
 */
const NOT_BUILT: Readonly<Record<string, string>> = {
  'registry.k8s.io/pause:3.10.2': 'mini’s node image (images.mjs); every node has it as its pod sandbox',
  'registry.k8s.io/etcd:3.7.0-0': 'mini’s control-plane image (images.mjs); the runner imports it on every node',
  [`${E2E}/apparmor-loader:1.4`]: 'AppArmor specs only (not conformance)',
  'registry.k8s.io/build-image/distroless-iptables:v0.9.9': 'kube-proxy specs only (not conformance)',
  'invalid.registry.k8s.io/invalid/alpine:3.1': 'a name that must not resolve (its specs expect the pull to fail)',
  'gcr.io/k8s-authenticated-test/agnhost:2.6': 'a private registry’s image (private-registry specs, not conformance)',
  [`${E2E}/ipc-utils:1.4`]: 'no conformance spec uses it',
  [`${E2E}/node-perf/npb-ep:1.6.0`]: 'node performance specs only',
  [`${E2E}/node-perf/npb-is:1.7.0`]: 'node performance specs only',
  [`${E2E}/node-perf/pytorch-wide-deep:1.0.0`]: 'node performance specs only',
  [`${E2E}/perl:5.26`]: 'no conformance spec uses it',
  [`${E2E}/regression-issue-74839:1.5`]: 'conntrack specs only (not conformance)',
  [`${E2E}/resource-consumer:1.14`]: 'autoscaling specs only (not conformance)',
  [`${E2E}/volume/nfs:1.6.0`]: 'NFS volume specs only (not conformance)',
  [`${E2E}/volume/iscsi:2.7`]: 'iSCSI volume specs only (not conformance)',
  [`${E2E}/sample-device-plugin:1.7`]: 'device plugin specs only (not conformance)',
  'registry.k8s.io/sig-storage/nfs-provisioner:v4.0.8': 'storage specs only (not conformance)',
};

/**
 * busybox as upstream releases it: the suite's busybox image is upstream's (busybox:1.37.0), whose
 * ash passes on environment variables whose names are not identifiers (the env-prefix specs
 * print them with `sh -c env`) and says `can't create /file: Read-only file system` (the read-only
 * root filesystem spec expects those words). Debian's busybox does neither (its ash drops those
 * variables, a patch of Debian's). The release tarball comes from Debian's archive, checked
 * against upstream's digest, and is built with upstream's default configuration, statically.
 */
const BUSYBOX_SOURCE = {
  version: '1.37.0',
  url: 'http://deb.debian.org/debian/pool/main/b/busybox/busybox_1.37.0.orig.tar.bz2',
  sha256: '3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4',
  seconds: 60,
};

/** What busybox's build changes in upstream's default configuration (line → replacement). */
const BUSYBOX_CONFIG: readonly (readonly [string, string])[] = [
  ['# CONFIG_STATIC is not set', 'CONFIG_STATIC=y'],
  // tc does not build against newer kernel headers (CBQ is gone); no spec runs it.
  ['CONFIG_TC=y', '# CONFIG_TC is not set'],
];

/**
 * Alpine's minirootfs, for the images that upstream builds on agnhost, which is Alpine
 * (alpine:3.21): kitten and nautilus (the ImageVolume spec mounts kitten and reads its
 * /etc/os-release, expecting Alpine). It comes through the Go module proxy, as the proxy serves
 * github.com/alpinelinux/docker-alpine (the repository Docker's alpine image is built from;
 * checked against the Go checksum database, and here against the tarball's digest). The proxy
 * serves one version of that repository: Alpine edge of 2026-08-05, a stand-in for 3.21.
 */
const ALPINE_ROOTFS = {
  module: 'github.com/alpinelinux/docker-alpine',
  version: 'v0.0.0-20260806101352-410e6fcf56b6',
  file: 'x86_64/alpine-minirootfs-20260805-x86_64.tar.gz',
  sha256: '5acac12c425a0817c1b6a79bdd5df4c73756fc8dc268eab32f8ba830872b835d',
};

interface GoProgram {
  /** Its file name in bin/. */
  name: string;
  pkg: string;
  /** A test binary (`go test -c`). */
  test?: boolean;
  /** A cold build's duration here, for the progress lines. */
  seconds: number;
}

/** Go programs: output name, package, cold duration here (seconds). e2e.test is a test binary. */
const PROGRAMS: readonly GoProgram[] = [
  { name: 'e2e.test', pkg: 'k8s.io/kubernetes/test/e2e', test: true, seconds: 240 },
  { name: 'ginkgo', pkg: 'github.com/onsi/ginkgo/v2/ginkgo', seconds: 20 },
  { name: 'agnhost', pkg: 'k8s.io/kubernetes/test/images/agnhost', seconds: 60 },
  { name: 'nnp', pkg: 'k8s.io/kubernetes/test/images/nonewprivs', seconds: 5 },
  { name: 'sample-apiserver', pkg: 'k8s.io/sample-apiserver', seconds: 40 },
];

/** How every Go program is built (with kubernetesLdflags of the release). */
const GO_BUILD = {
  env: { CGO_ENABLED: '0', GOFLAGS: '-mod=mod -buildvcs=false' },
  flags: ['-trimpath', '-tags', 'selinux,notest'],
};

/** The programs in bin/ once the suite is built: the Go programs and busybox. */
const BUILT_PROGRAMS = [...PROGRAMS.map((p) => p.name), 'busybox'];

/** About how long building the images takes, after the programs, for the progress lines. */
const IMAGES_SECONDS = 120;

/**
 * Debian packages for the images whose upstream base is a distribution (alpine or debian): the
 * commands the specs run in them (curl, dig, nc, getent in agnhost; dig and getent in
 * glibc-dns-testing, which upstream is debian:bookworm-slim plus dnsutils), and nginx.
 */
const DEBIAN = {
  agnhost: ['bash', 'curl', 'bind9-dnsutils', 'netcat-openbsd', 'libc-bin', 'iproute2'],
  glibcDns: ['bash', 'coreutils', 'libc-bin', 'grep', 'sed', 'bind9-dnsutils'],
  nginx: ['nginx'],
};
type DebianImage = keyof typeof DEBIAN;

/** What the images built on Debian's packages leave out of them (no spec reads it). */
const DEBIAN_LEFT_OUT = ['usr/share/doc', 'usr/share/man', 'usr/share/info', 'usr/share/locale', 'usr/share/lintian'];

/**
 * The links Debian's maintainer scripts would make with update-alternatives (they do not run
 * here): command → the package's program, where the package is in the image.
 */
const ALTERNATIVES: readonly (readonly [string, string])[] = [
  ['bin/nc', 'nc.openbsd'],
  ['usr/bin/awk', 'mawk'],
];

// The nginx stand-in: Debian's nginx serving as nginx's own image does (port 80, default page,
// in the foreground, logs on the container's output).
const NGINX_CONF = `user root;
worker_processes 1;
pid /run/nginx.pid;
error_log /dev/stderr notice;
events { worker_connections 1024; }
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  access_log /dev/stdout;
  sendfile on;
  server {
    listen 80 default_server;
    listen [::]:80 default_server;
    server_name localhost;
    root /usr/share/nginx/html;
    index index.html;
  }
}
`;
const NGINX_INDEX = `<!DOCTYPE html>
<html><head><title>Welcome to nginx!</title></head>
<body><h1>Welcome to nginx!</h1><p>Debian's nginx, standing in for the e2e test image.</p></body></html>
`;

// ---- the images ----------------------------------------------------------------------------

/** What the images' root filesystems are made from, and where the build notes what went in. */
interface ImageInputs {
  /** The built programs (agnhost, nnp, sample-apiserver, busybox). */
  bin: string;
  /** k8s.io/kubernetes's test/images (kitten's and nautilus's files, porter's key). */
  testImages: string;
  /** Where Debian's packages are downloaded to, once per build. */
  debs: string;
  debianPackages: Partial<Record<DebianImage, Record<string, string>>>;
  alpine: { rootfs?: AlpineRootfsSource };
}

interface ImagePlan {
  reference: string;
  what: string;
  /** Its base: scratch unless given (an image built before it). */
  from?: string;
  /** Containerfile lines after the root filesystem. */
  config: readonly string[];
  /** Fills the image's root filesystem. */
  fill(rootfs: string, inputs: ImageInputs): Promise<void> | void;
}

/** Each image: how to fill its rootfs, then its Containerfile lines (and base image). */
const IMAGE_PLAN: readonly ImagePlan[] = [
  {
    reference: REF.agnhost,
    what: 'agnhost: the program, Debian’s curl, dig, nc, getent, bash, busybox',
    async fill(rootfs, inputs) {
      inputs.debianPackages.agnhost = await debianRootfs(DEBIAN.agnhost, inputs.debs, rootfs);
      symlinkSync('bash', join(rootfs, 'bin', 'sh'));
      await addBusybox(rootfs, join(inputs.bin, 'busybox'));
      addBaseFiles(
        rootfs,
        ['user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh'],
        ['user-defined-in-image:x:1000:user-defined-in-image', 'group-defined-in-image:x:50000:user-defined-in-image'],
      );
      install(join(inputs.bin, 'agnhost'), rootfs, 'agnhost');
      symlinkSync('agnhost', join(rootfs, 'agnhost-2'));
      const porter = join(inputs.testImages, 'agnhost', 'porter');
      install(join(porter, 'localhost.crt'), rootfs, 'localhost.crt', 0o644);
      install(join(porter, 'localhost.key'), rootfs, 'localhost.key', 0o644);
      ensureDir(join(rootfs, 'uploads'));
      ensureDir(join(rootfs, 'home', 'user-defined-in-image'));
    },
    config: ['WORKDIR /', 'EXPOSE 80 8080 8081 9376 5000', 'ENTRYPOINT ["/agnhost"]', 'CMD ["pause"]'],
  },
  {
    reference: REF.agnhostPrev,
    what: 'the previous agnhost: the same program, a distinct image (specs roll from it to the current one)',
    fill(rootfs) {
      ensureDir(join(rootfs, 'etc'));
      writeFileSync(join(rootfs, 'etc', 'agnhost-release'), 'agnhost 2.55 stand-in: the 2.66.1 program\n');
    },
    from: REF.agnhost,
    config: [],
  },
  ...(
    [
      [REF.kitten, 'kitten'],
      [REF.nautilus, 'nautilus'],
    ] as const
  ).map(([reference, picture]): ImagePlan => ({
    reference,
    what: `${picture}: agnhost’s test-webserver with its picture, on Alpine’s minirootfs as upstream`,
    async fill(rootfs, inputs) {
      inputs.alpine.rootfs = await alpineRootfs(rootfs);
      install(join(inputs.bin, 'agnhost'), rootfs, 'agnhost');
      for (const file of [`${picture}.jpg`, 'data.json'])
        install(join(inputs.testImages, picture, 'html', file), rootfs, file, 0o644);
    },
    config: ['WORKDIR /', 'EXPOSE 80', 'ENTRYPOINT ["/agnhost"]', 'CMD ["test-webserver"]'],
  })),
  {
    reference: REF.busybox,
    what: `busybox: upstream busybox ${BUSYBOX_SOURCE.version} (its ash as sh)`,
    async fill(rootfs, inputs) {
      await addBusybox(rootfs, join(inputs.bin, 'busybox'));
      addBaseFiles(rootfs);
    },
    config: ['CMD ["sh"]'],
  },
  {
    reference: REF.nonewprivs,
    what: 'nonewprivs: nnp, setuid root, and busybox',
    async fill(rootfs, inputs) {
      await addBusybox(rootfs, join(inputs.bin, 'busybox'));
      addBaseFiles(rootfs);
      install(join(inputs.bin, 'nnp'), rootfs, 'usr/local/bin/nnp', 0o4755);
    },
    config: ['CMD ["nnp"]'],
  },
  {
    reference: REF.nonroot,
    what: 'nonroot: busybox with user 1234',
    async fill(rootfs, inputs) {
      await addBusybox(rootfs, join(inputs.bin, 'busybox'));
      addBaseFiles(rootfs);
    },
    config: ['USER 1234'],
  },
  {
    reference: REF.glibcDns,
    what: 'glibc-dns-testing: Debian’s dig, getent, bash, coreutils',
    async fill(rootfs, inputs) {
      inputs.debianPackages.glibcDns = await debianRootfs(DEBIAN.glibcDns, inputs.debs, rootfs);
      symlinkSync('bash', join(rootfs, 'bin', 'sh'));
      await addBusybox(rootfs, join(inputs.bin, 'busybox'));
      addBaseFiles(rootfs);
    },
    config: ['CMD ["bash"]'],
  },
  ...[REF.nginx, REF.nginxNew].map((reference): ImagePlan => ({
    reference,
    what: 'nginx: Debian’s nginx (a stand-in for nginx’s alpine image)',
    async fill(rootfs, inputs) {
      inputs.debianPackages.nginx = await debianRootfs(DEBIAN.nginx, inputs.debs, rootfs);
      await addBusybox(rootfs, join(inputs.bin, 'busybox'));
      addBaseFiles(rootfs, ['www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin'], ['www-data:x:33:']);
      writeFileSync(join(rootfs, 'etc', 'nginx', 'nginx.conf'), NGINX_CONF);
      mkdirSync(join(rootfs, 'usr', 'share', 'nginx', 'html'), { recursive: true });
      writeFileSync(join(rootfs, 'usr', 'share', 'nginx', 'html', 'index.html'), NGINX_INDEX);
      for (const dir of ['var/lib/nginx', 'var/log/nginx']) ensureDir(join(rootfs, dir));
    },
    config: ['EXPOSE 80', 'STOPSIGNAL SIGQUIT', 'CMD ["nginx", "-g", "daemon off;"]'],
  })),
  {
    reference: REF.sampleApiserver,
    what: 'sample-apiserver: k8s.io/sample-apiserver of the release',
    async fill(rootfs, inputs) {
      await addBusybox(rootfs, join(inputs.bin, 'busybox'));
      addBaseFiles(rootfs);
      install(join(inputs.bin, 'sample-apiserver'), rootfs, 'sample-apiserver');
    },
    config: ['ENTRYPOINT ["/sample-apiserver"]'],
  },
];

// ---- the recipe ----------------------------------------------------------------------------

/** The release tools/kubernetes/e2e/go.mod requires (the programs' release). */
function conformanceRelease(): string {
  const goMod = readFileSync(join(E2E_MODULE_DIR, 'go.mod'), 'utf8');
  const release = /^\tk8s\.io\/kubernetes (v\d+\.\d+\.\d+)/m.exec(goMod)?.[1];
  return release ?? fail('tools/kubernetes/e2e/go.mod does not require k8s.io/kubernetes');
}

/** The hash of everything the build's output depends on: the tables above and the e2e module. */
function conformanceRecipeHash(release: string): string {
  const recipe = {
    recipeVersion: RECIPE_VERSION,
    release,
    go: goVersion('the conformance suite'),
    // Estimates and descriptions are left out: changing them rebuilds nothing.
    programs: PROGRAMS.map(({ seconds: _seconds, ...program }) => program),
    goBuild: GO_BUILD,
    ldflags: kubernetesLdflags(release),
    refs: REF,
    notBuilt: NOT_BUILT,
    busybox: { ...BUSYBOX_SOURCE, seconds: undefined },
    busyboxConfig: BUSYBOX_CONFIG,
    alpine: ALPINE_ROOTFS,
    debian: DEBIAN,
    debianLeftOut: DEBIAN_LEFT_OUT,
    alternatives: ALTERNATIVES,
    nginx: { conf: NGINX_CONF, index: NGINX_INDEX },
    // The plan's data; what its fill functions do is code, covered by RECIPE_VERSION.
    images: IMAGE_PLAN.map(({ reference, from, config }) => ({ reference, from, config })),
  };
  return recipeHash(recipe, [join(E2E_MODULE_DIR, 'go.mod'), join(E2E_MODULE_DIR, 'go.sum')]);
}

// ---- the programs --------------------------------------------------------------------------

async function buildPrograms(release: string, bin: string, overall: Overall): Promise<void> {
  const env = { ...process.env, ...GO_BUILD.env };
  for (const [i, program] of PROGRAMS.entries()) {
    const args = program.test === true ? ['test', '-c'] : ['build'];
    args.push(...GO_BUILD.flags, '-ldflags', kubernetesLdflags(release));
    args.push('-o', join(bin, program.name), program.pkg);
    await withProgress(log, `[${i + 1}/${PROGRAMS.length}] ${program.name}`, program.seconds, overall, () =>
      runBuildStep('go', args, { cwd: E2E_MODULE_DIR, env }),
    );
  }
}

/** Downloads busybox's release tarball (checked against its digest) and builds it statically into `bin`. */
async function buildBusybox(bin: string, scratch: string, overall: Overall): Promise<void> {
  await withProgress(log, `busybox ${BUSYBOX_SOURCE.version}`, BUSYBOX_SOURCE.seconds, overall, async () => {
    const response = await fetch(BUSYBOX_SOURCE.url, { signal: AbortSignal.timeout(120_000) });
    if (!response.ok) throw new Error(`downloading ${BUSYBOX_SOURCE.url}: HTTP ${response.status}`);
    const tarball = Buffer.from(await response.arrayBuffer());
    const digest = createHash('sha256').update(tarball).digest('hex');
    if (digest !== BUSYBOX_SOURCE.sha256) {
      throw new Error(
        `${BUSYBOX_SOURCE.url} has sha256 ${digest}, busybox ${BUSYBOX_SOURCE.version} has ${BUSYBOX_SOURCE.sha256}`,
      );
    }
    mkdirSync(scratch, { recursive: true });
    writeFileSync(join(scratch, 'busybox.tar.bz2'), tarball);
    await runBuildStep('tar', ['-xjf', 'busybox.tar.bz2'], { cwd: scratch });
    const source = join(scratch, `busybox-${BUSYBOX_SOURCE.version}`);
    await runBuildStep('make', ['defconfig'], { cwd: source });
    let config = readFileSync(join(source, '.config'), 'utf8');
    for (const [line, replacement] of BUSYBOX_CONFIG) config = config.replace(line, replacement);
    if (!config.includes('CONFIG_STATIC=y')) throw new Error('busybox defconfig: no CONFIG_STATIC option to set');
    writeFileSync(join(source, '.config'), config);
    await runBuildStep('make', [`-j${availableParallelism()}`, 'busybox'], { cwd: source });
    copyFileSync(join(source, 'busybox'), join(bin, 'busybox'));
    chmodSync(join(bin, 'busybox'), 0o755);
    rmSync(scratch, { recursive: true, force: true });
  });
}

// ---- what the images are made from ---------------------------------------------------------

/** Unpacks Alpine's minirootfs (downloaded through the Go module proxy once) into `rootfs`. */
async function alpineRootfs(rootfs: string): Promise<AlpineRootfsSource> {
  const module = `${ALPINE_ROOTFS.module}@${ALPINE_ROOTFS.version}`;
  const output = await runBuildStep('go', ['mod', 'download', '-json', module], { cwd: E2E_MODULE_DIR });
  const download = JSON.parse(output) as { Dir?: string; Error?: string };
  if (download.Error !== undefined || download.Dir === undefined)
    throw new Error(`${module}: ${download.Error ?? 'go mod download names no directory'}`);
  const tarball = join(download.Dir, ALPINE_ROOTFS.file);
  const digest = createHash('sha256').update(readFileSync(tarball)).digest('hex');
  if (digest !== ALPINE_ROOTFS.sha256) {
    throw new Error(`${tarball} has sha256 ${digest}, expected ${ALPINE_ROOTFS.sha256}`);
  }
  mkdirSync(rootfs, { recursive: true });
  await runBuildStep('tar', ['-xzf', tarball, '-C', rootfs]);
  return { module, file: ALPINE_ROOTFS.file, sha256: digest };
}

/** Where Go keeps the k8s.io/kubernetes module (the test images' files: kitten, nautilus, porter's key). */
async function kubernetesSource(): Promise<string> {
  const args = ['list', '-mod=mod', '-m', '-f', '{{.Dir}}', 'k8s.io/kubernetes'];
  return (await runBuildStep('go', args, { cwd: E2E_MODULE_DIR })).trim();
}

/** Whether `apt-get update` ran in this build (once, when apt-cache did not know a package). */
let aptUpdated = false;

/** The packages `packages` need, recursively (Depends and Pre-Depends; every alternative). */
async function debianClosure(packages: readonly string[]): Promise<string[]> {
  const args = ['depends', '--recurse', '--no-recommends', '--no-suggests', '--no-conflicts', '--no-breaks'];
  args.push('--no-replaces', '--no-enhances', ...packages);
  let out: string;
  try {
    out = await runBuildStep('apt-cache', args);
  } catch (error) {
    if (aptUpdated) throw error;
    log('apt-cache does not know the packages: apt-get update');
    await runBuildStep('apt-get', ['update', '-qq']);
    aptUpdated = true;
    out = await runBuildStep('apt-cache', args);
  }
  const names = out.split('\n').filter((line) => line !== '' && !line.startsWith(' ') && !line.startsWith('<'));
  return [...new Set(names)].sort();
}

/** Downloads the packages (once per build) and unpacks them into `rootfs`; returns name → version. */
async function debianRootfs(
  packages: readonly string[],
  debs: string,
  rootfs: string,
): Promise<Record<string, string>> {
  const closure = await debianClosure(packages);
  mkdirSync(debs, { recursive: true });
  // A .deb's file name is <name>_<version, URL-encoded>_<architecture>.deb.
  const have = new Set(readdirSync(debs).map((file) => file.split('_')[0]));
  const missing = closure.filter((name) => !have.has(name));
  if (missing.length > 0) await runBuildStep('apt-get', ['download', '-qq', ...missing], { cwd: debs });
  const versions: Record<string, string> = {};
  mkdirSync(rootfs, { recursive: true });
  for (const file of readdirSync(debs)) {
    const [name = '', version = ''] = file.split('_');
    if (!closure.includes(name)) continue;
    await runBuildStep('dpkg-deb', ['-x', join(debs, file), rootfs]);
    versions[name] = decodeURIComponent(version);
  }
  for (const dir of DEBIAN_LEFT_OUT) rmSync(join(rootfs, dir), { recursive: true, force: true });
  // No maintainer scripts run: the library cache is made here, as libc-bin's trigger would.
  await runBuildStep('ldconfig', ['-r', rootfs]);
  addAlternatives(rootfs);
  return versions;
}

// ---- image contents ------------------------------------------------------------------------

function ensureDir(path: string, mode = 0o755): void {
  mkdirSync(path, { recursive: true });
  chmodSync(path, mode);
}

function addAlternatives(rootfs: string): void {
  for (const [link, target] of ALTERNATIVES) {
    const path = join(rootfs, link);
    if (!lexists(path) && existsSync(join(dirname(path), target))) symlinkSync(target, path);
  }
}

/**
 * The built busybox and, for each applet, a link where the image has no such command yet (an
 * image whose commands come from Debian's packages keeps them, and bash as sh).
 */
async function addBusybox(rootfs: string, busybox: string): Promise<void> {
  ensureDir(join(rootfs, 'bin'));
  if (!existsSync(join(rootfs, 'bin', 'busybox'))) copyFileSync(busybox, join(rootfs, 'bin', 'busybox'));
  chmodSync(join(rootfs, 'bin', 'busybox'), 0o755);
  const applets = (await runBuildStep(busybox, ['--list'])).trim().split('\n');
  for (const applet of applets) {
    if (applet === 'busybox') continue;
    const taken = ['bin', 'sbin', 'usr/bin', 'usr/sbin'].some((dir) => lexists(join(rootfs, dir, applet)));
    if (!taken) symlinkSync('busybox', join(rootfs, 'bin', applet));
  }
}

/** Whether `path` exists, a dangling link included. */
function lexists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** /etc/passwd and /etc/group with root, nobody and the image's own users; /tmp and /run. */
function addBaseFiles(rootfs: string, users: readonly string[] = [], groups: readonly string[] = []): void {
  ensureDir(join(rootfs, 'etc'));
  ensureDir(join(rootfs, 'tmp'), 0o1777);
  ensureDir(join(rootfs, 'run'));
  ensureDir(join(rootfs, 'root'), 0o700);
  const passwd = ['root:x:0:0:root:/root:/bin/sh', ...users, 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false'];
  const group = ['root:x:0:', ...groups, 'nogroup:x:65534:'];
  writeFileSync(join(rootfs, 'etc', 'passwd'), `${passwd.join('\n')}\n`);
  writeFileSync(join(rootfs, 'etc', 'group'), `${group.join('\n')}\n`);
}

/** Copies `source` to `target` in `rootfs` with `mode`. */
function install(source: string, rootfs: string, target: string, mode = 0o755): void {
  const destination = join(rootfs, target);
  mkdirSync(dirname(destination), { recursive: true });
  copyFileSync(source, destination);
  chmodSync(destination, mode);
}

// ---- the build -----------------------------------------------------------------------------

interface BuiltImages {
  built: BuiltTestImage[];
  debianPackages: ImageInputs['debianPackages'];
  alpine: ImageInputs['alpine'];
}

async function buildImages(bin: string, scratch: string, out: string, overall: Overall): Promise<BuiltImages> {
  const storage = buildahStorage(scratch);
  const inputs: ImageInputs = {
    bin,
    testImages: join(await kubernetesSource(), 'test', 'images'),
    debs: join(scratch, 'debs'),
    debianPackages: {},
    alpine: {},
  };
  mkdirSync(out, { recursive: true });
  const built: BuiltTestImage[] = [];
  for (const [i, image] of IMAGE_PLAN.entries()) {
    await withProgress(log, `[${i + 1}/${IMAGE_PLAN.length}] ${image.reference}`, undefined, overall, async () => {
      const rootfs = join(scratch, 'rootfs', String(i));
      mkdirSync(rootfs, { recursive: true });
      await image.fill(rootfs, inputs);
      const { reference, config, from } = image;
      const recipe = from === undefined ? { reference, rootfs, config } : { reference, rootfs, config, from };
      const archive = await buildImage(storage, scratch, out, recipe);
      built.push({ reference, archive, what: image.what });
    });
  }
  // buildah's storage is ours alone and holds only copies: removed, nothing left in the machine's.
  await runBuildStep('buildah', [...storage, 'rmi', '--all', '--force']).catch(() => undefined);
  return { built, debianPackages: inputs.debianPackages, alpine: inputs.alpine };
}

/** Every reference built or listed as not built must be one the suite names; returns the others it names. */
async function checkNames(e2eTest: string, built: readonly BuiltTestImage[]): Promise<string[]> {
  const listed = new Set((await runBuildStep(e2eTest, ['--list-images'])).trim().split('\n'));
  const unknown = [...built.map((b) => b.reference), ...Object.keys(NOT_BUILT)].filter((r) => !listed.has(r));
  if (unknown.length > 0) throw new Error(`e2e.test --list-images does not name: ${unknown.join(', ')}`);
  return [...listed].filter((r) => !built.some((b) => b.reference === r) && !(r in NOT_BUILT));
}

async function build(release: string, recipe: string, dir: string): Promise<void> {
  const totalSeconds = PROGRAMS.reduce((sum, p) => sum + p.seconds, 0) + BUSYBOX_SOURCE.seconds + IMAGES_SECONDS;
  const overall: Overall = { started: Date.now(), totalSeconds };
  log(
    `building the conformance suite for Kubernetes ${release} and its test images into ${dir}` +
      ` (about ${formatSeconds(totalSeconds)} on 2 cores after the Kubernetes programs; later runs reuse Go's build cache)`,
  );
  await buildInWorkDirectory(dir, async (work) => {
    const out = conformanceSuiteLayout(join(work, 'out'));
    mkdirSync(out.binDir, { recursive: true });
    await buildPrograms(release, out.binDir, overall);
    await buildBusybox(out.binDir, join(work, 'scratch', 'busybox'), overall);
    const images = await buildImages(out.binDir, join(work, 'scratch'), out.imagesDir, overall);
    const unlisted = await checkNames(out.e2eTest, images.built);
    const manifest: ConformanceImagesManifest = {
      release,
      recipe,
      builtAt: new Date().toISOString(),
      programs: BUILT_PROGRAMS,
      busybox: { version: BUSYBOX_SOURCE.version, source: BUSYBOX_SOURCE.url, sha256: BUSYBOX_SOURCE.sha256 },
      images: images.built,
      notBuilt: Object.entries(NOT_BUILT).map(([reference, reason]): NotBuiltTestImage => ({ reference, reason })),
      notBuiltOther: unlisted,
      debianPackages: images.debianPackages,
      alpine: images.alpine,
    };
    writeFileSync(join(out.imagesDir, 'images.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    const programs = { release, programs: manifest.programs };
    writeFileSync(join(out.binDir, 'release.json'), `${JSON.stringify(programs, null, 2)}\n`);
    return join(work, 'out');
  });
  log(`built in ${formatSeconds((Date.now() - overall.started) / 1000)}`);
}

function isComplete(dir: string): boolean {
  const suite = conformanceSuiteLayout(dir);
  return (
    existsSync(join(suite.imagesDir, 'images.json')) &&
    BUILT_PROGRAMS.every((name) => existsSync(join(suite.binDir, name)))
  );
}

async function main(): Promise<void> {
  const args = parseBuildArgs(process.argv.slice(2), USAGE);
  const release = conformanceRelease();
  const conformanceDir = join(constellationCacheDir(), 'conformance');
  const recipe = conformanceRecipeHash(release);
  const name = `${release}-${recipe}`;
  const dir = join(conformanceDir, name);
  if (args.printDir) {
    if (!isComplete(dir)) {
      process.stderr.write(`the conformance suite for ${release} is not built yet: run ${CONFORMANCE_BUILD_COMMAND}\n`);
      process.exit(3);
    }
  } else if (args.rebuild || !isComplete(dir)) {
    // Earlier recipes' builds of this release are about 1.5 GB each; other releases' stay.
    pruneOtherRecipes(conformanceDir, name, release);
    await build(release, recipe, dir);
  }
  process.stdout.write(`${dir}\n`);
}

await main();
