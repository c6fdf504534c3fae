// `npm run conformance`: the upstream Kubernetes conformance suite (test/e2e, the specs labelled
// Conformance) against the running mini cluster. Builds the suite and its test images once
// (tools/kubernetes/conformance-build.mjs), imports the images into every node, runs the specs in
// parallel with ginkgo, prints progress, and at the end passed / failed / skipped with each
// failure's first line and the JUnit report. See --help.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { archivePath, imagesDirBeside, readImagesManifest } from '@constellation/kubernetes-programs';
import {
  importImages,
  listImages,
  miniClusterRecordPath,
  openMachineAt,
  readMiniClusterRecord,
  setRegistryMirror,
} from '@constellation/machines';
import type { Machine } from '@constellation/machines';
import { readArchiveManifest, startImageRegistry } from '@constellation/node-environment';
import {
  CONFORMANCE_BUILD_COMMAND,
  CONFORMANCE_BUILD_SCRIPT,
  conformanceSuiteLayout,
} from '../kubernetes/conformance-suite.js';
import { REPOSITORY_ROOT, UsageError, parseOptions } from './options.js';
import type { Options } from './options.js';
import { literalPattern, readSkipList } from './skip-list.js';
import type { SkippedSpec } from './skip-list.js';

const root = REPOSITORY_ROOT;

function log(line: string): void {
  process.stderr.write(`[conformance] ${line}\n`);
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${String(s % 60).padStart(2, '0')} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** Seconds of a duration like 2h30m (validated by parseArgs). */
function seconds(text: string): number {
  const part = (unit: string): number => Number(new RegExp(`(\\d+)${unit}`).exec(text)?.[1] ?? 0);
  return part('h') * 3600 + part('m') * 60 + part('s');
}

// ---- the suite ---------------------------------------------------------------------------------

interface Suite {
  dir: string;
  e2e: string;
  ginkgo: string;
  release: string;
  images: { reference: string; archive: string }[];
}

/** Builds the suite when missing (progress on stderr) and reads what it built. */
async function buildSuite(): Promise<Suite> {
  const result = spawnSync(process.execPath, [CONFORMANCE_BUILD_SCRIPT], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error('building the conformance suite failed (see above)');
  const dir = result.stdout.trim();
  const layout = conformanceSuiteLayout(dir);
  const manifest = await readImagesManifest(layout.imagesDir, CONFORMANCE_BUILD_COMMAND);
  return {
    dir,
    e2e: layout.e2eTest,
    ginkgo: layout.ginkgo,
    release: manifest.release,
    images: manifest.images.map((image) => ({
      reference: image.reference,
      archive: archivePath(layout.imagesDir, image),
    })),
  };
}

// ---- the cluster -------------------------------------------------------------------------------

interface Cluster {
  kubeconfig: string;
  kubectl: string;
  kubernetesBinDir: string;
  /** The address the nodes reach the host on (the test-image registry listens there). */
  hostIp: string;
  nodes: { name: string; role: string; machine: Machine }[];
}

function kubectl(cluster: Pick<Cluster, 'kubectl' | 'kubeconfig'>, args: string[]): string {
  const result = spawnSync(cluster.kubectl, ['--kubeconfig', cluster.kubeconfig, '--request-timeout=20s', ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    maxBuffer: 64 << 20,
  });
  if (result.status !== 0) {
    throw new Error(`kubectl ${args.join(' ')} failed: ${(result.stderr || String(result.error)).trim()}`);
  }
  return result.stdout;
}

async function findCluster(options: Options): Promise<Cluster> {
  let state = await readMiniClusterRecord(options.workspace);
  if (state === undefined && options.up && options.workspace === root) {
    log('no mini cluster runs here: bringing one up (npm run mini); it stays up after the run (npm run mini -- down)');
    const up = spawnSync('bash', [join(root, 'tools', 'dev', 'mini.sh'), 'up'], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
      timeout: 20 * 60_000,
    });
    if (up.status !== 0) throw new Error('npm run mini failed (see above)');
    state = await readMiniClusterRecord(options.workspace);
  }
  if (state === undefined) {
    throw new UsageError(
      `no mini cluster runs in ${options.workspace} (no ${miniClusterRecordPath(options.workspace)}): ` +
        (options.workspace === root
          ? 'start one with `npm run mini` (--no-up keeps the runner from starting one)'
          : `start one there with \`constellation mini up\` (the runner brings one up only in ${root})`),
    );
  }
  if (state.kubernetesBinDir === undefined) {
    throw new UsageError(
      'the mini cluster was started by an older constellation: `npm run mini -- down`, then `npm run mini`',
    );
  }
  const kubeconfig = join(options.workspace, 'constellation-admin.conf');
  if (!existsSync(kubeconfig)) throw new UsageError(`the mini cluster has no admin kubeconfig yet (${kubeconfig})`);
  const nodes: Cluster['nodes'] = [];
  for (const node of state.nodes) {
    const machine = await openMachineAt(node.dir);
    if (machine === undefined) throw new Error(`node ${node.name} has no machine in ${node.dir}`);
    nodes.push({ name: node.name, role: node.role, machine });
  }
  return {
    kubeconfig,
    kubectl: join(state.kubernetesBinDir, 'kubectl'),
    kubernetesBinDir: state.kubernetesBinDir,
    hostIp: state.network.hostIp,
    nodes,
  };
}

interface KubeList<T> {
  items: T[];
}
interface KubeNode {
  metadata: { name: string };
  status?: { conditions?: { type: string; status: string }[] };
}
interface KubePod {
  metadata: { name: string };
  status?: { phase?: string; conditions?: { type: string; status: string }[] };
}

const ready = (conditions: { type: string; status: string }[] | undefined): boolean =>
  conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** The API answers, the nodes are Ready, and what in kube-system is not (the suite waits for it). */
function checkCluster(cluster: Cluster, release: string): void {
  const version = JSON.parse(kubectl(cluster, ['version', '-o', 'json'])) as {
    serverVersion?: { gitVersion?: string };
  };
  const server = version.serverVersion?.gitVersion ?? 'unknown';
  if (server !== release) log(`warning: the API server is ${server}, the suite is ${release}`);
  const nodes = (JSON.parse(kubectl(cluster, ['get', 'nodes', '-o', 'json'])) as KubeList<KubeNode>).items;
  const notReady = nodes.filter((n) => !ready(n.status?.conditions)).map((n) => n.metadata.name);
  log(
    `cluster: Kubernetes ${server}, ${nodes.length} nodes` +
      (notReady.length > 0 ? `, not Ready: ${notReady.join(', ')}` : ', all Ready'),
  );
  const pods = (JSON.parse(kubectl(cluster, ['get', 'pods', '-n', 'kube-system', '-o', 'json'])) as KubeList<KubePod>)
    .items;
  const waiting = pods.filter((p) => p.status?.phase !== 'Succeeded' && !ready(p.status?.conditions));
  if (waiting.length > 0) {
    log(
      `warning: kube-system pods not Ready: ${waiting.map((p) => `${p.metadata.name} (${p.status?.phase ?? '?'})`).join(', ')}; ` +
        'the suite waits for them (--system-pods-startup-timeout, default 10m) and fails every spec if they stay so; ' +
        `to let it start after 1 min anyway: npm run conformance -- -- --allowed-not-ready-nodes=${waiting.length} ` +
        '--system-pods-startup-timeout=1m (your own options go before the second --)',
    );
  }
}

// ---- images --------------------------------------------------------------------------------------

/** The suite's images and mini's own images the suite names (etcd, pause), by reference. */
async function testImages(suite: Suite, cluster: Cluster): Promise<{ reference: string; archive: string }[]> {
  const listed = new Set(
    spawnSync(suite.e2e, ['--list-images'], { encoding: 'utf8', maxBuffer: 1 << 20 })
      .stdout.trim()
      .split('\n'),
  );
  const miniImagesDir = imagesDirBeside(cluster.kubernetesBinDir);
  const mini = await readImagesManifest(miniImagesDir, 'node tools/kubernetes/images.mjs');
  const fromMini = mini.images
    .filter((image) => listed.has(image.reference))
    .map((image) => ({ reference: image.reference, archive: archivePath(miniImagesDir, image) }));
  return [...suite.images, ...fromMini];
}

/** Imports into each node what it lacks (or holds in another version), nodes side by side. */
async function importTestImages(cluster: Cluster, images: { reference: string; archive: string }[]): Promise<void> {
  const started = Date.now();
  // An archive that cannot be read is imported anyway: ctr then says what is wrong with it.
  const wanted = await Promise.all(
    images.map(async (image) => ({
      ...image,
      digest: await readArchiveManifest(image.archive).then(
        (manifest) => manifest.digest,
        () => undefined,
      ),
    })),
  );
  await Promise.all(
    cluster.nodes.map(async (node) => {
      const have = await listImages(node.machine);
      const missing = wanted.filter(
        (image) => image.digest === undefined || !have.has(`${image.reference}@${image.digest}`),
      );
      const nodeStarted = Date.now();
      await importImages(
        node.machine,
        missing.map((image) => image.archive),
      );
      log(
        `${node.name}: ${missing.length} of ${wanted.length} test images imported` +
          (missing.length > 0 ? ` in ${duration(Date.now() - nodeStarted)}` : ' (the others were there)'),
      );
    }),
  );
  log(`test images on every node (${duration(Date.now() - started)})`);
}

/**
 * Specs that pull with policy Always (an image volume's) need a registry: mini reaches none
 * outside, so the runner serves the test images on the nodes' bridge for the run, and each node's
 * containerd uses it as registry.k8s.io's mirror until the run ends.
 */
async function serveTestImages(
  cluster: Cluster,
  images: { reference: string; archive: string }[],
): Promise<{ close(): Promise<void> }> {
  const started = Date.now();
  const registry = await startImageRegistry({ host: cluster.hostIp, images });
  const setMirrors = (mirror: string | undefined): Promise<unknown> =>
    Promise.all(
      cluster.nodes.flatMap((node) =>
        registry.upstreams.map((upstream) => setRegistryMirror(node.machine, upstream, mirror)),
      ),
    );
  try {
    await setMirrors(registry.url);
  } catch (error) {
    await setMirrors(undefined).catch(() => undefined);
    await registry.close();
    throw error;
  }
  log(
    `test images served at ${registry.url}, the nodes' mirror of ${registry.upstreams.join(', ')} during the run ` +
      `(${duration(Date.now() - started)})`,
  );
  return {
    async close() {
      await setMirrors(undefined).catch((error: unknown) => {
        log(`warning: removing the nodes' registry mirror failed: ${String(error)}`);
      });
      await registry.close();
    },
  };
}

// ---- ginkgo's reports ----------------------------------------------------------------------------

interface SpecReport {
  ContainerHierarchyTexts: string[] | null;
  LeafNodeText: string;
  LeafNodeType: string;
  State: string;
  RunTime: number;
  Failure?: { Message?: string; Location?: { FileName?: string; LineNumber?: number } };
}
interface SuiteReport {
  SuiteSucceeded: boolean;
  SpecialSuiteFailureReasons: string[] | null;
  SpecReports: SpecReport[] | null;
}

const fullName = (spec: SpecReport): string => [...(spec.ContainerHierarchyTexts ?? []), spec.LeafNodeText].join(' ');

const FAILED_STATES = new Set(['failed', 'panicked', 'timedout', 'interrupted', 'aborted']);

async function readReport(file: string): Promise<SuiteReport[]> {
  return JSON.parse(await readFile(file, 'utf8')) as SuiteReport[];
}

/** The specs the filters select, from a dry run of e2e.test (no cluster contacted). */
async function plannedSpecs(suite: Suite, options: Options, reportDir: string): Promise<string[]> {
  const report = join(reportDir, 'plan.json');
  const args = [
    '--ginkgo.dry-run',
    '--ginkgo.silence-skips',
    '--ginkgo.no-color',
    `--ginkgo.label-filter=${options.labelFilter}`,
    ...options.focus.map((f) => `--ginkgo.focus=${f}`),
    ...options.skip.map((s) => `--ginkgo.skip=${s}`),
    `--ginkgo.json-report=${report}`,
    '--provider=skeleton',
  ];
  const result = spawnSync(suite.e2e, args, { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 << 20 });
  if (!existsSync(report)) {
    const output = (result.stdout + result.stderr).trim().split('\n');
    // A filter that is not a regular expression makes ginkgo panic: its first line says why.
    const panic = output.find((line) => line.startsWith('panic: '));
    throw new UsageError(
      `e2e.test rejected the filters: ${panic?.slice('panic: '.length) ?? output.slice(-5).join('\n')}`,
    );
  }
  const specs = (await readReport(report)).flatMap((r) => r.SpecReports ?? []);
  return specs.filter((s) => s.LeafNodeType === 'It' && s.State === 'passed').map(fullName);
}

// ---- the run -------------------------------------------------------------------------------------

interface Progress {
  passed: number;
  failed: number;
  started: number;
}

/** Counts what ginkgo's succinct stream reports: `•` per passed spec, `• [FAILED]` and the like per failure. */
function countStream(chunk: string, progress: Progress): void {
  for (const match of chunk.matchAll(/•( \[(FAILED|PANICKED|TIMEDOUT|INTERRUPTED|ABORTED)\])?/g)) {
    if (match[1] === undefined) progress.passed++;
    else progress.failed++;
  }
}

async function runSuite(
  suite: Suite,
  cluster: Cluster,
  options: Options,
  reportDir: string,
  skipPatterns: string[],
  total: number,
  serial: number,
): Promise<number> {
  const args = [
    'run',
    '-p',
    '--procs',
    String(options.procs),
    '--timeout',
    options.timeout,
    '--label-filter',
    options.labelFilter,
    ...options.focus.flatMap((f) => ['--focus', f]),
    ...[...options.skip, ...skipPatterns].flatMap((s) => ['--skip', s]),
    '--silence-skips',
    '--no-color',
    '--output-dir',
    reportDir,
    '--json-report',
    'report.json',
    '--junit-report',
    'junit.xml',
    suite.e2e,
    '--',
    '--provider=skeleton',
    `--kubeconfig=${cluster.kubeconfig}`,
    // The kubectl specs run the cluster's own kubectl.
    `--kubectl-path=${join(cluster.kubernetesBinDir, 'kubectl')}`,
    ...options.e2eArgs,
  ];
  const logFile = join(reportDir, 'ginkgo.log');
  const out = createWriteStream(logFile);
  const progress: Progress = { passed: 0, failed: 0, started: Date.now() };
  log(
    `running ${total} ${total === 1 ? 'spec' : 'specs'} with ${options.procs} processes` +
      (serial > 0 ? `, the ${serial} Serial ones one at a time after the others` : '') +
      ` (full log: ${logFile})`,
  );
  const child = spawn(suite.ginkgo, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: reportDir });
  const print = (): void => {
    const done = progress.passed + progress.failed;
    log(
      `${duration(Date.now() - progress.started)}: ${done}/${total} done, ${progress.passed} passed, ${progress.failed} failed`,
    );
  };
  let lastDone = -1;
  let lastPrint = Date.now();
  const onData = (chunk: Buffer): void => {
    out.write(chunk);
    const before = progress.failed;
    countStream(chunk.toString('utf8'), progress);
    if (progress.failed > before) print();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const tick = setInterval(() => {
    const done = progress.passed + progress.failed;
    // A line every 30 s while specs complete, every 5 min while none does.
    if (done !== lastDone || Date.now() - lastPrint >= 300_000) {
      print();
      lastPrint = Date.now();
    }
    lastDone = done;
  }, 30_000);
  // ginkgo stops itself at --timeout; this bound is for a ginkgo that does not.
  const bound = setTimeout(
    () => {
      log(`ginkgo still runs ${duration(10 * 60_000)} after --timeout: stopping it`);
      child.kill('SIGKILL');
    },
    (seconds(options.timeout) + 600) * 1000,
  );
  const interrupt = (): void => {
    log('interrupted: stopping ginkgo (it cleans up its namespaces)');
    child.kill('SIGINT');
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const code = await new Promise<number>((resolveCode, reject) => {
    child.once('error', reject);
    child.once('close', (c) => {
      resolveCode(c ?? 1);
    });
  });
  clearInterval(tick);
  clearTimeout(bound);
  process.off('SIGINT', interrupt);
  process.off('SIGTERM', interrupt);
  await new Promise<void>((done) => out.end(done));
  print();
  return code;
}

function firstLine(text: string | undefined): string {
  const line = (text ?? '').split('\n').find((l) => l.trim() !== '') ?? '';
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

/** passed / failed / skipped from the merged JSON report; returns whether every spec that ran passed. */
async function summarize(
  reportDir: string,
  planned: string[],
  skippedByList: SkippedSpec[],
  elapsedMs: number,
): Promise<boolean> {
  const reportFile = join(reportDir, 'report.json');
  if (!existsSync(reportFile)) {
    log(`ginkgo wrote no report (${reportFile}): see ${join(reportDir, 'ginkgo.log')}`);
    return false;
  }
  const reports = await readReport(reportFile);
  const specs = reports.flatMap((r) => r.SpecReports ?? []);
  const wanted = new Set(planned);
  const its = specs.filter((s) => s.LeafNodeType === 'It' && wanted.has(fullName(s)));
  const passed = its.filter((s) => s.State === 'passed');
  const failed = its.filter((s) => FAILED_STATES.has(s.State));
  const skippedAtRun = its.filter((s) => s.State === 'skipped' || s.State === 'pending');
  const suiteFailures = specs.filter((s) => s.LeafNodeType !== 'It' && FAILED_STATES.has(s.State));
  const notRun = planned.length - skippedByList.length - its.length;
  const out: string[] = [''];
  for (const s of suiteFailures) out.push(`suite ${s.LeafNodeType} ${s.State}: ${firstLine(s.Failure?.Message)}`);
  for (const reason of reports.flatMap((r) => r.SpecialSuiteFailureReasons ?? [])) out.push(`suite: ${reason}`);
  if (failed.length > 0) {
    out.push(`failed (${failed.length}):`);
    for (const s of failed) {
      const where =
        s.Failure?.Location?.FileName === undefined
          ? ''
          : ` (${s.Failure.Location.FileName.replace(/^.*\/test\/e2e\//, 'test/e2e/')}:${s.Failure.Location.LineNumber ?? '?'})`;
      out.push(`  ${fullName(s)}`, `    ${s.State}: ${firstLine(s.Failure?.Message)}${where}`);
    }
  }
  if (skippedByList.length > 0) {
    out.push(`skipped by the skip list (${skippedByList.length}):`);
    for (const s of skippedByList) out.push(`  ${s.name}`, `    ${s.reason}`);
  }
  if (skippedAtRun.length > 0) {
    out.push(`skipped by the suite itself (${skippedAtRun.length}):`);
    for (const s of skippedAtRun) out.push(`  ${fullName(s)}: ${firstLine(s.Failure?.Message)}`);
  }
  out.push(
    `${passed.length} passed, ${failed.length} failed, ${skippedByList.length + skippedAtRun.length} skipped` +
      (notRun > 0 ? `, ${notRun} not run (the run was cut off)` : '') +
      ` of ${planned.length} specs in ${duration(elapsedMs)}`,
    `JUnit report: ${join(reportDir, 'junit.xml')}`,
    `JSON report and full log: ${reportFile}, ${join(reportDir, 'ginkgo.log')}`,
    // The plain last line every long run prints; a spec the cut-off run never reached counts as failed.
    `${passed.length} passed, ${failed.length + suiteFailures.length + Math.max(notRun, 0)} failed`,
  );
  process.stdout.write(`${out.join('\n')}\n`);
  return failed.length === 0 && suiteFailures.length === 0 && notRun <= 0;
}

function timestamp(): string {
  return new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
}

async function main(): Promise<number> {
  let options: Options | 'help';
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  if (options === 'help') return 0;
  const skipList = options.skipList === undefined ? [] : await readSkipList(options.skipList);
  const reportDir = options.reportDir ?? join(options.workspace, 'constellation-conformance', timestamp());
  await mkdir(reportDir, { recursive: true });
  const suite = await buildSuite();
  const planned = await plannedSpecs(suite, options, reportDir);
  const plannedSet = new Set(planned);
  const skippedByList = skipList.filter((s) => plannedSet.has(s.name));
  const toRun = planned.filter((name) => !skipList.some((s) => s.name === name));
  if (options.dryRun) {
    process.stdout.write(`${toRun.join('\n')}\n`);
    log(
      `${toRun.length} specs would run, ${skippedByList.length} skipped by the skip list ` +
        `(--mode ${options.mode}, label filter '${options.labelFilter}')`,
    );
    return 0;
  }
  if (toRun.length === 0) throw new UsageError('no spec matches the filters');
  if (process.getuid?.() !== 0) throw new UsageError('the runner enters mini’s nodes to import images: run it as root');
  const cluster = await findCluster(options);
  checkCluster(cluster, suite.release);
  const images = await testImages(suite, cluster);
  if (options.importImages) await importTestImages(cluster, images);
  const registry = await serveTestImages(cluster, images);
  try {
    const started = Date.now();
    const code = await runSuite(
      suite,
      cluster,
      options,
      reportDir,
      skippedByList.map((s) => literalPattern(s.name)),
      toRun.length,
      toRun.filter((name) => name.includes('[Serial]')).length,
    );
    const ok = await summarize(reportDir, planned, skippedByList, Date.now() - started);
    return ok && code === 0 ? 0 : 1;
  } finally {
    await registry.close();
  }
}

// A reader that stops early (`--dry-run | head`) is not an error: the rest of the output is
// dropped, and the exit code stays the run's.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
});

try {
  process.exitCode = await main();
} catch (error) {
  process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = error instanceof UsageError ? 2 : 1;
}
