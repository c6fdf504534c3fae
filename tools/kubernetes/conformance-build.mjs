#!/usr/bin/env node
// Builds what the upstream Kubernetes conformance suite needs to run against mini, from the Go
// module proxy and Debian's packages, into a cache outside the clone, once per machine, release
// and recipe (`npm run conformance` runs it first):
//
//   bin/     e2e.test (k8s.io/kubernetes/test/e2e), the ginkgo CLI of the version e2e requires,
//            agnhost, nnp (nonewprivs) and sample-apiserver
//   images/  the test images the conformance specs use, as OCI archives named exactly as
//            test/utils/image/manifest.go names them, with images.json (built and not built)
//
//   node tools/kubernetes/conformance-build.mjs              build what is missing, print the directory
//   node tools/kubernetes/conformance-build.mjs --print-dir  print it; exit 3 when not built
//   node tools/kubernetes/conformance-build.mjs --rebuild    build everything again
//
// The release is the one tools/kubernetes/e2e/go.mod pins (the programs' release). The directory
// is $CONSTELLATION_CACHE_DIR (default ${XDG_CACHE_HOME:-~/.cache}/constellation)/conformance/
// <release>-<hash of this recipe>. Needs Go, buildah, gcc, make, bzip2 and apt (Debian).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SCRIPT_HELPERS_FILE, formatSeconds, run } from './script-helpers.mjs';
import { VERSION_STAMP_FILE, kubernetesLdflags } from './version-stamp.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const moduleDir = join(here, 'e2e');
/** Raise to rebuild everywhere when the build changes in a way this file's text does not show. */
const RECIPE_VERSION = 1;

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
const NOT_BUILT = {
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

/** Go programs: output name, package, cold duration here (seconds). e2e.test is a test binary. */
const PROGRAMS = [
  { name: 'e2e.test', pkg: 'k8s.io/kubernetes/test/e2e', test: true, seconds: 240 },
  { name: 'ginkgo', pkg: 'github.com/onsi/ginkgo/v2/ginkgo', seconds: 20 },
  { name: 'agnhost', pkg: 'k8s.io/kubernetes/test/images/agnhost', seconds: 60 },
  { name: 'nnp', pkg: 'k8s.io/kubernetes/test/images/nonewprivs', seconds: 5 },
  { name: 'sample-apiserver', pkg: 'k8s.io/sample-apiserver', seconds: 40 },
];

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

function fail(message) {
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
}

function log(line) {
  process.stderr.write(`[conformance-build] ${line}\n`);
}

function capture(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...options });
  if (result.error !== undefined || result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed: ${(result.stderr || String(result.error)).trim()}`);
  }
  return result.stdout;
}

function parseArgs(argv) {
  const options = { rebuild: false, printDir: false, help: false };
  for (const arg of argv) {
    if (arg === '--rebuild') options.rebuild = true;
    else if (arg === '--print-dir') options.printDir = true;
    else if (arg === '--help' || arg === '-h') options.help = true;
    else fail(`unknown argument ${arg} (expected --rebuild, --print-dir or --help)`);
  }
  return options;
}

function pinnedRelease() {
  const match = /^\tk8s\.io\/kubernetes (v\d+\.\d+\.\d+)/m.exec(readFileSync(join(moduleDir, 'go.mod'), 'utf8'));
  if (match?.[1] === undefined) fail('tools/kubernetes/e2e/go.mod does not require k8s.io/kubernetes');
  return match[1];
}

function goVersion() {
  try {
    return capture('go', ['env', 'GOVERSION']).trim();
  } catch {
    return fail('Go is needed to build the conformance suite (go 1.26 or newer on PATH): `go env GOVERSION` failed');
  }
}

function cacheRoot() {
  if (process.env.CONSTELLATION_CACHE_DIR) return process.env.CONSTELLATION_CACHE_DIR;
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'constellation');
}

function recipeHash(release, go) {
  const hash = createHash('sha256').update(`${RECIPE_VERSION}\n${release}\n${go}\n`);
  hash.update(readFileSync(fileURLToPath(import.meta.url)));
  hash.update(readFileSync(VERSION_STAMP_FILE));
  hash.update(readFileSync(SCRIPT_HELPERS_FILE));
  for (const file of ['go.mod', 'go.sum']) hash.update(readFileSync(join(moduleDir, file)));
  return hash.digest('hex').slice(0, 12);
}

/** Runs `step` with a progress line every 30 s. */
async function withProgress(label, estimate, started, total, step) {
  const stepStarted = Date.now();
  log(`${label}: ${estimate === undefined ? 'started' : `about ${formatSeconds(estimate)} cold`}`);
  const tick = setInterval(() => {
    log(
      `${label}: ${formatSeconds((Date.now() - stepStarted) / 1000)} so far, ` +
        `${formatSeconds((Date.now() - started) / 1000)} of about ${formatSeconds(total)} in all`,
    );
  }, 30_000);
  try {
    await step();
  } finally {
    clearInterval(tick);
  }
  log(`${label}: done in ${formatSeconds((Date.now() - stepStarted) / 1000)}`);
}

async function buildPrograms(release, bin, started, total) {
  const env = { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=mod -buildvcs=false' };
  for (const [i, program] of PROGRAMS.entries()) {
    const args = program.test ? ['test', '-c'] : ['build'];
    args.push('-trimpath', '-tags', 'selinux,notest', '-ldflags', kubernetesLdflags(release));
    args.push('-o', join(bin, program.name), program.pkg);
    await withProgress(`[${i + 1}/${PROGRAMS.length}] ${program.name}`, program.seconds, started, total, () =>
      run('go', args, { cwd: moduleDir, env }),
    );
  }
}

/** Downloads busybox's release tarball (checked against its digest) and builds it statically into `bin`. */
async function buildBusybox(bin, scratch, started, total) {
  await withProgress(`busybox ${BUSYBOX_SOURCE.version}`, BUSYBOX_SOURCE.seconds, started, total, async () => {
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
    await run('tar', ['-xjf', 'busybox.tar.bz2'], { cwd: scratch });
    const source = join(scratch, `busybox-${BUSYBOX_SOURCE.version}`);
    await run('make', ['defconfig'], { cwd: source });
    const config = readFileSync(join(source, '.config'), 'utf8')
      .replace('# CONFIG_STATIC is not set', 'CONFIG_STATIC=y')
      // tc does not build against newer kernel headers (CBQ is gone); no spec runs it.
      .replace('CONFIG_TC=y', '# CONFIG_TC is not set');
    if (!config.includes('CONFIG_STATIC=y')) throw new Error('busybox defconfig: no CONFIG_STATIC option to set');
    writeFileSync(join(source, '.config'), config);
    await run('make', [`-j${availableParallelism()}`, 'busybox'], { cwd: source });
    copyFileSync(join(source, 'busybox'), join(bin, 'busybox'));
    chmodSync(join(bin, 'busybox'), 0o755);
    rmSync(scratch, { recursive: true, force: true });
  });
}

/** Unpacks Alpine's minirootfs (downloaded through the Go module proxy once) into `rootfs`. */
async function alpineRootfs(rootfs) {
  const download = JSON.parse(
    capture('go', ['mod', 'download', '-json', `${ALPINE_ROOTFS.module}@${ALPINE_ROOTFS.version}`], {
      cwd: moduleDir,
    }),
  );
  if (download.Error) throw new Error(`${ALPINE_ROOTFS.module}@${ALPINE_ROOTFS.version}: ${download.Error}`);
  const tarball = join(download.Dir, ALPINE_ROOTFS.file);
  const digest = createHash('sha256').update(readFileSync(tarball)).digest('hex');
  if (digest !== ALPINE_ROOTFS.sha256) {
    throw new Error(`${tarball} has sha256 ${digest}, expected ${ALPINE_ROOTFS.sha256}`);
  }
  mkdirSync(rootfs, { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', rootfs]);
  return { module: `${ALPINE_ROOTFS.module}@${ALPINE_ROOTFS.version}`, file: ALPINE_ROOTFS.file, sha256: digest };
}

/** Where Go keeps the k8s.io/kubernetes module (the test images' files: kitten, nautilus, porter's key). */
function kubernetesSource() {
  return capture('go', ['list', '-mod=mod', '-m', '-f', '{{.Dir}}', 'k8s.io/kubernetes'], { cwd: moduleDir }).trim();
}

// ---- Debian root filesystems ---------------------------------------------------------------

let aptUpdated = false;

/** The packages `packages` need, recursively (Depends and Pre-Depends; every alternative). */
function debianClosure(packages) {
  const args = ['depends', '--recurse', '--no-recommends', '--no-suggests', '--no-conflicts', '--no-breaks'];
  args.push('--no-replaces', '--no-enhances', ...packages);
  let out;
  try {
    out = capture('apt-cache', args);
  } catch (error) {
    if (aptUpdated) throw error;
    log('apt-cache does not know the packages: apt-get update');
    capture('apt-get', ['update', '-qq']);
    aptUpdated = true;
    out = capture('apt-cache', args);
  }
  const names = out.split('\n').filter((line) => line !== '' && !line.startsWith(' ') && !line.startsWith('<'));
  return [...new Set(names)].sort();
}

/** Downloads the packages (once per build) and unpacks them into `rootfs`; returns name → version. */
async function debianRootfs(packages, debs, rootfs) {
  const closure = debianClosure(packages);
  mkdirSync(debs, { recursive: true });
  const have = new Set(readdirSync(debs).map((file) => file.split('_')[0]));
  const missing = closure.filter((name) => !have.has(name));
  if (missing.length > 0) await run('apt-get', ['download', '-qq', ...missing], { cwd: debs });
  const versions = {};
  mkdirSync(rootfs, { recursive: true });
  for (const file of readdirSync(debs)) {
    const [name, version] = file.split('_');
    if (!closure.includes(name)) continue;
    await run('dpkg-deb', ['-x', join(debs, file), rootfs]);
    versions[name] = decodeURIComponent(version);
  }
  for (const dir of ['usr/share/doc', 'usr/share/man', 'usr/share/info', 'usr/share/locale', 'usr/share/lintian']) {
    rmSync(join(rootfs, dir), { recursive: true, force: true });
  }
  // No maintainer scripts run: the library cache is made here, as libc-bin's trigger would.
  await run('ldconfig', ['-r', rootfs]);
  addAlternatives(rootfs);
  return versions;
}

// ---- image contents ------------------------------------------------------------------------

function ensureDir(path, mode = 0o755) {
  mkdirSync(path, { recursive: true });
  chmodSync(path, mode);
}

/**
 * The links Debian's maintainer scripts would make with update-alternatives (they do not run
 * here): command → the package's program, where the package is in the image.
 */
const ALTERNATIVES = [
  ['bin/nc', 'nc.openbsd'],
  ['usr/bin/awk', 'mawk'],
];

function addAlternatives(rootfs) {
  for (const [link, target] of ALTERNATIVES) {
    const path = join(rootfs, link);
    if (!lexists(path) && existsSync(join(dirname(path), target))) symlinkSync(target, path);
  }
}

/**
 * The built busybox and, for each applet, a link where the image has no such command yet (an
 * image whose commands come from Debian's packages keeps them, and bash as sh).
 */
function addBusybox(rootfs, busybox) {
  ensureDir(join(rootfs, 'bin'));
  if (!existsSync(join(rootfs, 'bin', 'busybox'))) copyFileSync(busybox, join(rootfs, 'bin', 'busybox'));
  chmodSync(join(rootfs, 'bin', 'busybox'), 0o755);
  const applets = capture(busybox, ['--list']).trim().split('\n');
  for (const applet of applets) {
    if (applet === 'busybox') continue;
    const taken = ['bin', 'sbin', 'usr/bin', 'usr/sbin'].some((dir) => lexists(join(rootfs, dir, applet)));
    if (!taken) symlinkSync('busybox', join(rootfs, 'bin', applet));
  }
}

function lexists(path) {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** /etc/passwd and /etc/group with root, nobody and the image's own users; /tmp and /run. */
function addBaseFiles(rootfs, users = [], groups = []) {
  ensureDir(join(rootfs, 'etc'));
  ensureDir(join(rootfs, 'tmp'), 0o1777);
  ensureDir(join(rootfs, 'run'));
  ensureDir(join(rootfs, 'root'), 0o700);
  const passwd = ['root:x:0:0:root:/root:/bin/sh', ...users, 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false'];
  const group = ['root:x:0:', ...groups, 'nogroup:x:65534:'];
  writeFileSync(join(rootfs, 'etc', 'passwd'), `${passwd.join('\n')}\n`);
  writeFileSync(join(rootfs, 'etc', 'group'), `${group.join('\n')}\n`);
}

function install(source, rootfs, target, mode = 0o755) {
  const destination = join(rootfs, target);
  mkdirSync(dirname(destination), { recursive: true });
  copyFileSync(source, destination);
  chmodSync(destination, mode);
}

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

// ---- buildah -------------------------------------------------------------------------------

/** One image: FROM `from` (default scratch), the rootfs copied in, then `config` lines. */
async function buildImage(scratch, out, storage, reference, rootfs, config, from = 'scratch') {
  const context = join(scratch, 'contexts', reference.replace(/[^a-z0-9.-]+/gi, '_'));
  mkdirSync(context, { recursive: true });
  const lines = [`FROM ${from}`];
  if (rootfs !== undefined) {
    // ADD of a tar archive keeps every mode bit (nnp's setuid); buildah's COPY drops setuid.
    await run('tar', ['-C', rootfs, '--numeric-owner', '-cf', join(context, 'rootfs.tar'), '.']);
    rmSync(rootfs, { recursive: true, force: true });
    lines.push('ADD rootfs.tar /');
  }
  if (from === 'scratch') lines.push('ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
  lines.push(...config, '');
  writeFileSync(join(context, 'Containerfile'), lines.join('\n'));
  await run('buildah', [
    ...storage,
    'bud',
    '--quiet',
    '--layers=false',
    '--pull-never',
    // A fixed time: the same inputs give the same image digests.
    '--timestamp=0',
    '--file',
    join(context, 'Containerfile'),
    '--tag',
    reference,
    context,
  ]);
  rmSync(context, { recursive: true, force: true });
  const archive = `${reference.replace(/[^a-z0-9.-]+/gi, '_')}.oci.tar`;
  await run('buildah', [...storage, 'push', '--quiet', reference, `oci-archive:${join(out, archive)}:${reference}`]);
  return archive;
}

async function buildImages(bin, scratch, out, started, total) {
  const storage = [
    '--root',
    join(scratch, 'storage'),
    '--runroot',
    join(scratch, 'runroot'),
    '--storage-driver',
    'vfs',
  ];
  const source = kubernetesSource();
  const images = join(source, 'test', 'images');
  const busybox = join(bin, 'busybox');
  const debs = join(scratch, 'debs');
  const root = (name) => join(scratch, 'rootfs', name);
  mkdirSync(out, { recursive: true });
  const built = [];
  const debian = {};
  const alpine = {};

  /** Each image: how to fill its rootfs, then its Containerfile lines (and base image). */
  const plan = [
    {
      reference: REF.agnhost,
      what: 'agnhost: the program, Debian’s curl, dig, nc, getent, bash, busybox',
      async fill(rootfs) {
        debian.agnhost = await debianRootfs(DEBIAN.agnhost, debs, rootfs);
        symlinkSync('bash', join(rootfs, 'bin', 'sh'));
        addBusybox(rootfs, busybox);
        addBaseFiles(
          rootfs,
          ['user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh'],
          [
            'user-defined-in-image:x:1000:user-defined-in-image',
            'group-defined-in-image:x:50000:user-defined-in-image',
          ],
        );
        install(join(bin, 'agnhost'), rootfs, 'agnhost');
        symlinkSync('agnhost', join(rootfs, 'agnhost-2'));
        install(join(images, 'agnhost', 'porter', 'localhost.crt'), rootfs, 'localhost.crt', 0o644);
        install(join(images, 'agnhost', 'porter', 'localhost.key'), rootfs, 'localhost.key', 0o644);
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
    ...[
      [REF.kitten, 'kitten'],
      [REF.nautilus, 'nautilus'],
    ].map(([reference, picture]) => ({
      reference,
      what: `${picture}: agnhost’s test-webserver with its picture, on Alpine’s minirootfs as upstream`,
      async fill(rootfs) {
        alpine.rootfs = await alpineRootfs(rootfs);
        install(join(bin, 'agnhost'), rootfs, 'agnhost');
        for (const file of [`${picture}.jpg`, 'data.json'])
          install(join(images, picture, 'html', file), rootfs, file, 0o644);
      },
      config: ['WORKDIR /', 'EXPOSE 80', 'ENTRYPOINT ["/agnhost"]', 'CMD ["test-webserver"]'],
    })),
    {
      reference: REF.busybox,
      what: `busybox: upstream busybox ${BUSYBOX_SOURCE.version} (its ash as sh)`,
      fill(rootfs) {
        addBusybox(rootfs, busybox);
        addBaseFiles(rootfs);
      },
      config: ['CMD ["sh"]'],
    },
    {
      reference: REF.nonewprivs,
      what: 'nonewprivs: nnp, setuid root, and busybox',
      fill(rootfs) {
        addBusybox(rootfs, busybox);
        addBaseFiles(rootfs);
        install(join(bin, 'nnp'), rootfs, 'usr/local/bin/nnp', 0o4755);
      },
      config: ['CMD ["nnp"]'],
    },
    {
      reference: REF.nonroot,
      what: 'nonroot: busybox with user 1234',
      fill(rootfs) {
        addBusybox(rootfs, busybox);
        addBaseFiles(rootfs);
      },
      config: ['USER 1234'],
    },
    {
      reference: REF.glibcDns,
      what: 'glibc-dns-testing: Debian’s dig, getent, bash, coreutils',
      async fill(rootfs) {
        debian.glibcDns = await debianRootfs(DEBIAN.glibcDns, debs, rootfs);
        symlinkSync('bash', join(rootfs, 'bin', 'sh'));
        addBusybox(rootfs, busybox);
        addBaseFiles(rootfs);
      },
      config: ['CMD ["bash"]'],
    },
    ...[REF.nginx, REF.nginxNew].map((reference) => ({
      reference,
      what: 'nginx: Debian’s nginx (a stand-in for nginx’s alpine image)',
      async fill(rootfs) {
        debian.nginx = await debianRootfs(DEBIAN.nginx, debs, rootfs);
        addBusybox(rootfs, busybox);
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
      fill(rootfs) {
        addBusybox(rootfs, busybox);
        addBaseFiles(rootfs);
        install(join(bin, 'sample-apiserver'), rootfs, 'sample-apiserver');
      },
      config: ['ENTRYPOINT ["/sample-apiserver"]'],
    },
  ];

  for (const [i, image] of plan.entries()) {
    await withProgress(`[${i + 1}/${plan.length}] ${image.reference}`, undefined, started, total, async () => {
      const rootfs = root(String(i));
      mkdirSync(rootfs, { recursive: true });
      await image.fill(rootfs);
      const archive = await buildImage(scratch, out, storage, image.reference, rootfs, image.config, image.from);
      built.push({ reference: image.reference, archive, what: image.what });
    });
  }
  // buildah's storage is ours alone and holds only copies: removed, nothing left in the machine's.
  await run('buildah', [...storage, 'rmi', '--all', '--force']).catch(() => undefined);
  return { built, debian, alpine };
}

/** Every reference built or listed as not built must be one the suite names. */
function checkNames(bin, built) {
  const listed = new Set(capture(join(bin, 'e2e.test'), ['--list-images']).trim().split('\n'));
  const unknown = [...built.map((b) => b.reference), ...Object.keys(NOT_BUILT)].filter((r) => !listed.has(r));
  if (unknown.length > 0) throw new Error(`e2e.test --list-images does not name: ${unknown.join(', ')}`);
  return [...listed].filter((r) => !built.some((b) => b.reference === r) && !(r in NOT_BUILT));
}

async function build(release, dir) {
  const started = Date.now();
  const work = `${dir}.partial-${process.pid}`;
  for (const entry of existsSync(dirname(dir)) ? readdirSync(dirname(dir)) : []) {
    const pid = Number(/\.partial-(\d+)$/.exec(entry)?.[1]);
    if (pid > 0 && !isAlive(pid)) rmSync(join(dirname(dir), entry), { recursive: true, force: true });
  }
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'out', 'bin'), { recursive: true });
  const total = PROGRAMS.reduce((sum, p) => sum + p.seconds, 0) + BUSYBOX_SOURCE.seconds + 120;
  log(
    `building the conformance suite for Kubernetes ${release} and its test images into ${dir}` +
      ` (about ${formatSeconds(total)} on 2 cores after the Kubernetes programs; later runs reuse Go's build cache)`,
  );
  try {
    const bin = join(work, 'out', 'bin');
    await buildPrograms(release, bin, started, total);
    await buildBusybox(bin, join(work, 'scratch', 'busybox'), started, total);
    const { built, debian, alpine } = await buildImages(
      bin,
      join(work, 'scratch'),
      join(work, 'out', 'images'),
      started,
      total,
    );
    const unlisted = checkNames(bin, built);
    const manifest = {
      release,
      builtAt: new Date().toISOString(),
      programs: [...PROGRAMS.map((p) => p.name), 'busybox'],
      busybox: { version: BUSYBOX_SOURCE.version, source: BUSYBOX_SOURCE.url, sha256: BUSYBOX_SOURCE.sha256 },
      images: built,
      notBuilt: Object.entries(NOT_BUILT).map(([reference, reason]) => ({ reference, reason })),
      // Names the suite lists beyond these (the CSI drivers' images, for storage specs).
      notBuiltOther: unlisted,
      debianPackages: debian,
      alpine,
    };
    writeFileSync(join(work, 'out', 'images', 'images.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    writeFileSync(join(bin, 'release.json'), `${JSON.stringify({ release, programs: manifest.programs }, null, 2)}\n`);
  } catch (error) {
    rmSync(work, { recursive: true, force: true });
    fail(error.message);
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(join(work, 'out'), dir);
  rmSync(work, { recursive: true, force: true });
  log(`built in ${formatSeconds((Date.now() - started) / 1000)}`);
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function isComplete(dir) {
  return (
    existsSync(join(dir, 'images', 'images.json')) &&
    [...PROGRAMS.map((p) => p.name), 'busybox'].every((name) => existsSync(join(dir, 'bin', name)))
  );
}

/** Earlier recipes' builds of the same release go (each about 1.5 GB); other releases' stay. */
function pruneOldBuilds(conformanceDir, keep, release) {
  if (!existsSync(conformanceDir)) return;
  for (const entry of readdirSync(conformanceDir, { withFileTypes: true })) {
    if (entry.isDirectory() && entry.name !== keep && /^v\d/.test(entry.name) && entry.name.startsWith(`${release}-`)) {
      if (!entry.name.includes('.partial-')) rmSync(join(conformanceDir, entry.name), { recursive: true, force: true });
    }
  }
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  if (options.help) {
    const text = readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
    const end = text.findIndex((line) => !line.startsWith('//') && !line.startsWith('#!'));
    process.stdout.write(
      `${text
        .slice(1, end)
        .map((l) => l.replace(/^\/\/ ?/, ''))
        .join('\n')}\n`,
    );
    return;
  }
  const release = pinnedRelease();
  const conformanceDir = join(cacheRoot(), 'conformance');
  const name = `${release}-${recipeHash(release, goVersion())}`;
  const dir = join(conformanceDir, name);
  if (options.printDir) {
    if (!isComplete(dir)) {
      process.stderr.write(
        `the conformance suite for ${release} is not built yet: run node tools/kubernetes/conformance-build.mjs\n`,
      );
      process.exit(3);
    }
  } else if (options.rebuild || !isComplete(dir)) {
    pruneOldBuilds(conformanceDir, name, release);
    await build(release, dir);
  }
  process.stdout.write(`${dir}\n`);
}

await main();
