// Builds the real Kubernetes programs (Kubernetes, etcd, containerd, runc) from the Go module
// proxy into a cache outside the clone, once per machine, release and recipe.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '@constellation/errors';
import { constellationCacheDir } from '@constellation/files';
import {
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
import {
  KUBERNETES_MODULE_DIR,
  kubernetesLdflags,
  pinnedRelease,
  repinnedGoMod,
  requestedRelease,
} from './kubernetes-release.js';

const USAGE = `
Builds the real Kubernetes programs (Kubernetes, etcd, containerd, runc) from the Go module proxy
into a cache outside the clone, once per machine, release and recipe. Usage:

  node tools/kubernetes/build.mjs                 build what is missing, print the bin directory
  node tools/kubernetes/build.mjs --rebuild       build again even when the cache has it
  node tools/kubernetes/build.mjs --print-bin-dir print the bin directory; exit 3 when not built
  KUBERNETES_RELEASE=v1.36.3 node tools/kubernetes/build.mjs   another release (1.35 to 1.37)

The cache directory is $CONSTELLATION_CACHE_DIR or \${XDG_CACHE_HOME:-~/.cache}/constellation.
Its name holds the release and a hash of the recipe (the tables in tools/kubernetes/build.ts and
the Go modules beside it), so a fresh clone reuses a build and a changed recipe rebuilds.
`;

/** Raise to rebuild everywhere when the build changes in a way the data below does not show. */
const RECIPE_VERSION = 2;

/** The Go modules (folders beside this file) the programs are built in. */
const MODULES = ['k8s', 'etcd', 'containerd', 'runc'] as const;
type Module = (typeof MODULES)[number];

interface Program {
  name: string;
  module: Module;
  pkg: string;
  /** A cold build's duration on 2 cores here, for the progress lines. */
  seconds: number;
  cgo?: boolean;
  tags?: string;
}

const PROGRAMS: readonly Program[] = [
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

/** Build tags every program gets; a program's own come after them. */
const COMMON_TAGS = ['selinux', 'notest'];
const GOFLAGS = '-mod=mod -buildvcs=false';

const log = progressLog('kubernetes');

/** `<release>-<recipe hash>`: the build directory's name in the cache. */
function buildName(release: string): string {
  const recipe = {
    recipeVersion: RECIPE_VERSION,
    release,
    go: goVersion('the Kubernetes programs'),
    // Estimates are left out: changing them rebuilds nothing.
    programs: PROGRAMS.map(({ seconds: _seconds, ...program }) => program),
    tags: COMMON_TAGS,
    goflags: GOFLAGS,
    ldflags: kubernetesLdflags(release),
  };
  const files = MODULES.flatMap((module) =>
    ['go.mod', 'go.sum'].map((file) => join(import.meta.dirname, module, file)),
  );
  return `${release}-${recipeHash(recipe, files)}`;
}

/** The module folder to build `module` in: the committed one, or for another release a re-pinned copy. */
async function moduleDir(module: Module, release: string, work: string): Promise<string> {
  const committed = join(import.meta.dirname, module);
  if (module !== 'k8s' || release === pinnedRelease()) return committed;
  const copy = join(work, 'modules', module);
  mkdirSync(copy, { recursive: true });
  writeFileSync(join(copy, 'go.mod'), repinnedGoMod(release));
  log(`re-pinning the Kubernetes module to ${release} (go mod tidy)`);
  await runBuildStep('go', ['mod', 'tidy'], { cwd: copy });
  return copy;
}

async function build(release: string, binDir: string): Promise<void> {
  const totalSeconds = PROGRAMS.reduce((sum, p) => sum + p.seconds, 0);
  log(
    `building ${String(PROGRAMS.length)} programs for Kubernetes ${release} from the Go module proxy into ${binDir}` +
      ` (about ${formatSeconds(totalSeconds)} on 2 cores the first time; later runs reuse Go's build cache)`,
  );
  const overall = { started: Date.now(), totalSeconds };
  await buildInWorkDirectory(binDir, async (work) => {
    const bin = join(work, 'bin');
    mkdirSync(bin, { recursive: true });
    const dirs = new Map<Module, string>();
    for (const module of MODULES) dirs.set(module, await moduleDir(module, release, work));
    for (const [i, program] of PROGRAMS.entries()) {
      const args = ['build', '-trimpath', '-o', join(bin, program.name)];
      args.push('-tags', [...COMMON_TAGS, ...(program.tags === undefined ? [] : [program.tags])].join(','));
      args.push('-ldflags', kubernetesLdflags(release), program.pkg);
      const label = `[${String(i + 1)}/${String(PROGRAMS.length)}] ${program.name}`;
      await withProgress(log, label, program.seconds, overall, () =>
        runBuildStep('go', args, {
          cwd: dirs.get(program.module) ?? KUBERNETES_MODULE_DIR,
          env: { ...process.env, CGO_ENABLED: program.cgo === true ? '1' : '0', GOFLAGS },
        }).catch((error: unknown) => {
          throw new Error(`${program.name} did not build: ${errorMessage(error)}`);
        }),
      );
    }
    // Written last: a directory with release.json holds a complete build.
    const manifest = { release, programs: PROGRAMS.map((p) => p.name), builtAt: new Date().toISOString() };
    writeFileSync(join(bin, 'release.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    return bin;
  });
  log(`all ${String(PROGRAMS.length)} programs built in ${formatSeconds((Date.now() - overall.started) / 1000)}`);
}

function isComplete(binDir: string): boolean {
  return existsSync(join(binDir, 'release.json')) && PROGRAMS.every((p) => existsSync(join(binDir, p.name)));
}

async function main(): Promise<void> {
  const args = parseBuildArgs(process.argv.slice(2), USAGE, '--print-bin-dir');
  const release = requestedRelease();
  const kubernetesDir = join(constellationCacheDir(), 'kubernetes');
  const name = buildName(release);
  const binDir = join(kubernetesDir, name, 'bin');
  if (args.printDir) {
    if (!isComplete(binDir)) {
      process.stderr.write(
        `the Kubernetes programs for ${release} are not built yet: run node tools/kubernetes/build.mjs\n`,
      );
      process.exit(3);
    }
  } else if (args.rebuild || !isComplete(binDir)) {
    pruneOtherRecipes(kubernetesDir, name, release);
    await build(release, binDir);
  }
  process.stdout.write(`${binDir}\n`);
}

await main();
