// Bench and test fixture: a join storm as production has it. The JoinService runs as its own
// program in its own process; the simulated nodes run in other processes (storm-nodes.ts), each
// with its own software TPM identity registered in the instance registry; the registry runs here;
// the API server is the real one (a control plane of the storm's own; the service reads the cluster
// configuration from it, and a worker's join writes nothing to it), behind a proxy that can stop
// answering when a run asks for one.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { copyFile, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { threadId } from 'node:worker_threads';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { errorMessage } from '@constellation/errors';
import { MetadataServer } from '@constellation/instance-metadata';
import type { InstanceInfo } from '@constellation/instance-metadata';
import { createEkCa, freePort, openEkCa } from '@constellation/swtpm';
import { repoRoot, runChecked, withTimeout } from '@constellation/testing';
import type { EkCa } from '@constellation/swtpm';
import { startJoinServiceCluster } from './join-service-cluster.fixture.js';
import type { JoinServiceCluster } from './join-service-cluster.fixture.js';
import { CLUSTER, writeMountedFiles } from './join-service.fixture.js';
import { PausableProxy } from './pausable-proxy.fixture.js';
import { histogramCount, histogramQuantile } from './prometheus-histogram.fixture.js';
import { loadSoftwareTpms, manufactureSoftwareTpms, saveSoftwareTpms } from './software-tpm.fixture.js';
import type { SoftwareTpmIdentity } from './software-tpm.fixture.js';
import { stormNodeIp } from './storm-orders.js';
import type { NodeOutcome, NodeProcessCpu, StormOrders } from './storm-orders.js';
import { isRunning } from '@constellation/process';

/** /proc reports CPU in clock ticks of USER_HZ, 100 per second on Linux (proc(5)). */
const CLOCK_TICK_MS = 10;

const SRC = new URL('.', import.meta.url).pathname;
const BUNDLE = new URL('../dist/joinservice.mjs', import.meta.url).pathname;
const SOURCE_ARGS = ['--conditions=@constellation/source', '--import', 'tsx'];
/** The longest a node process may take to prepare its share of a storm. */
const READY_TIMEOUT_MS = 180_000;
/** How long after the nodes give up their processes may take to report. */
const REPORT_MARGIN_MS = 60_000;

/**
 * The EK CA and `count` software TPMs it certified, kept in `dir` between runs. The CA is RSA-2048,
 * as TPM vendors' CAs of RSA EK certificates are (see EkCaKeyAlgorithm); a `dir` made by an earlier
 * version keeps its CA.
 */
export async function stormIdentities(
  dir: string,
  count: number,
): Promise<{ ekCa: EkCa; identities: SoftwareTpmIdentity[]; manufactured: number }> {
  const caDir = join(dir, 'ek-ca');
  const ekCa = existsSync(caDir)
    ? await openEkCa(caDir)
    : await createEkCa(caDir, { name: 'Join storm', keyAlgorithm: 'rsa-2048' });
  const file = join(dir, 'identities.json');
  const cached = existsSync(file) ? await loadSoftwareTpms(file) : [];
  if (cached.length >= count) return { ekCa, identities: cached.slice(0, count), manufactured: 0 };
  const fresh = await manufactureSoftwareTpms(ekCa, 'storm', { first: cached.length, end: count }, join(dir, 'work'));
  const identities = [...cached, ...fresh];
  await saveSoftwareTpms(file, identities);
  return { ekCa, identities, manufactured: count - cached.length };
}

export interface StormClusterOptions {
  dir: string;
  ekCa: EkCa;
  identities: readonly SoftwareTpmIdentity[];
  /** The bundled program (as deployed) or the TypeScript source through tsx (tests). */
  program: 'bundle' | 'source';
  /** Write a V8 CPU profile of the JoinService process here. */
  cpuProfileDir?: string;
  /**
   * Put the API server behind a proxy that `silenceApi` can stop. Only runs that silence the API
   * need it: every request through it costs this process two more sockets' work, on the cores the
   * service and the nodes share (about 0.4 ms of a join, measured).
   */
  silenceableApi?: boolean;
}

/** What a storm left behind, checked after it: a join writes nothing and credentials only its own node. */
export interface JoinAudit {
  /** Bootstrap-token Secrets the service minted: none (nodes join by file discovery). */
  tokenSecrets: number;
  /** Joined nodes whose ticket's kubelet client certificate names another node (or none). */
  ticketsForAnotherNode: string[];
}

/** Percentile `q` (0..1) of `values`, NaN when empty. */
export function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

export class StormCluster {
  /** The real control plane, with the service's production RBAC. */
  readonly cluster: JoinServiceCluster;
  private readonly proxy: PausableProxy | undefined;
  readonly registry: MetadataServer;
  readonly port: number;
  private readonly options: StormClusterOptions;
  private readonly args: string[];
  private service: ChildProcess | undefined;
  /** The service's last lines of output, for errors. */
  private readonly tail: string[] = [];
  /** The running service's metrics port, from its "joinservice serving" line. */
  private metricsPort: number | undefined;

  private constructor(
    options: StormClusterOptions,
    parts: {
      cluster: JoinServiceCluster;
      proxy: PausableProxy | undefined;
      registry: MetadataServer;
      port: number;
      args: string[];
    },
  ) {
    this.options = options;
    this.cluster = parts.cluster;
    this.proxy = parts.proxy;
    this.registry = parts.registry;
    this.port = parts.port;
    this.args = parts.args;
  }

  static async start(options: StormClusterOptions): Promise<StormCluster> {
    await mkdir(options.dir, { recursive: true });
    const cluster = await startJoinServiceCluster(join(options.dir, 'control-plane'), { cluster: CLUSTER });
    try {
      return await StormCluster.prepare(options, cluster);
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  private static async prepare(options: StormClusterOptions, cluster: JoinServiceCluster): Promise<StormCluster> {
    // A TCP proxy: TLS passes through, so the service keeps its token and the API server's certificate
    // (which names 127.0.0.1).
    const proxy = options.silenceableApi === true ? await PausableProxy.start(cluster.apiServerUrl) : undefined;
    const instances: InstanceInfo[] = options.identities.map((identity, i) => ({
      name: identity.name,
      ip: stormNodeIp(i),
      role: 'worker',
      ekPublicKeyHash: identity.ekPublicKeyHash,
    }));
    const registry = await MetadataServer.start({
      instances,
      endpoint: { host: cluster.controlPlane.namespace.ip, apiServerPort: 6443, joinServicePort: 0, initPort: 9000 },
      initSecretHash: '',
    });
    const { settings } = await writeMountedFiles(options.dir, cluster, proxy?.url);
    await copyFile(options.ekCa.rootCertPath, join(options.dir, 'config', 'ekRoots'));
    const port = await freePort();
    const args = [
      '--host=127.0.0.1',
      `--port=${port}`,
      '--metrics-host=127.0.0.1',
      '--metrics-port=0',
      '--health-port=0',
      `--config-dir=${join(options.dir, 'config')}`,
      `--master-secret-file=${settings.masterSecretPath}`,
      `--pki-dir=${settings.pkiDir}`,
      `--kubeconfig=${settings.kubeconfigPath ?? ''}`,
      `--api-server-endpoint=${cluster.apiServerEndpoint}`,
      `--instance-registry-url=${registry.url}`,
      // Every simulated machine connects from 127.0.0.1: the per-address bound is for one machine.
      '--max-connections-per-address=100000',
    ];
    return new StormCluster(options, { cluster, proxy, registry, port, args });
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Starts the JoinService process and waits until it serves (bounded). */
  async startService(timeoutMs = 30_000): Promise<void> {
    if (this.service !== undefined) throw new Error('the JoinService is running already');
    const profile =
      this.options.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${this.options.cpuProfileDir}`];
    const program =
      this.options.program === 'bundle' ? [...profile, BUNDLE] : [...profile, ...SOURCE_ARGS, join(SRC, 'main.ts')];
    const child = spawn(process.execPath, [...program, ...this.args], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.service = child;
    const serving = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`the JoinService did not serve within ${timeoutMs} ms: ${this.tail.join('\n')}`));
      }, timeoutMs);
      const onLine = (line: string): void => {
        this.tail.push(line);
        if (this.tail.length > 20) this.tail.shift();
        if (line.includes('"joinservice serving"')) {
          this.metricsPort = metricsPortOf(line);
          clearTimeout(timer);
          resolve();
        }
      };
      createInterface({ input: child.stdout }).on('line', onLine);
      createInterface({ input: child.stderr }).on('line', onLine);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the JoinService exited (${code ?? signal ?? ''}): ${this.tail.join('\n')}`));
      });
    });
    await serving;
  }

  /** The running service's Prometheus metrics, as scraped (bounded in time). */
  async metrics(): Promise<string> {
    if (this.service === undefined || this.metricsPort === undefined) throw new Error('the JoinService is not running');
    const answer = await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`, { signal: AbortSignal.timeout(10_000) });
    return answer.text();
  }

  /** SIGKILL: the process dies mid-work, as on a node crash or an OOM kill. */
  async killService(): Promise<void> {
    await this.stopService('SIGKILL');
  }

  /** Stops the service (SIGTERM lets it write its CPU profile) and waits for the exit (bounded). */
  async stopService(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.service;
    this.service = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) =>
      child.once('exit', () => {
        resolve();
      }),
    );
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  /** The API server stops answering (requests and connections are held, by the proxy) until `resumeApi`. */
  silenceApi(): void {
    this.silenceable().pause();
  }

  resumeApi(): void {
    this.silenceable().resume();
  }

  private silenceable(): PausableProxy {
    if (this.proxy === undefined) throw new Error('this storm cluster was started without silenceableApi');
    return this.proxy;
  }

  /** How many bootstrap-token Secrets the service minted (none since joins use file discovery), read as system:masters. */
  async mintedTokenCount(): Promise<number> {
    const { items } = await this.cluster.core.listNamespacedSecret({
      namespace: 'kube-system',
      labelSelector: 'constellation.dev/minted-by=joinservice',
    });
    return items.length;
  }

  /**
   * The API server's own time for Secret writes (`apiserver_request_duration_seconds` of
   * POST secrets, from its /metrics as system:masters): every such request since it started,
   * which in a storm cluster are kubeadm's one token: joins write none.
   */
  async apiServerSecretWrites(): Promise<{ count: number; p50: number | undefined; p99: number | undefined }> {
    const metrics = await this.cluster.admin.run(['get', '--raw', '/metrics']);
    const labels = { verb: 'POST', resource: 'secrets' };
    return {
      count: histogramCount(metrics, 'apiserver_request_duration_seconds', labels),
      p50: histogramQuantile(metrics, 'apiserver_request_duration_seconds', 0.5, labels),
      p99: histogramQuantile(metrics, 'apiserver_request_duration_seconds', 0.99, labels),
    };
  }

  /** What the storm left behind: the service's token Secrets (none), and tickets in another node's name. */
  async auditJoins(outcomes: readonly NodeOutcome[]): Promise<JoinAudit> {
    return {
      tokenSecrets: await this.mintedTokenCount(),
      ticketsForAnotherNode: outcomes.filter((o) => o.joined && o.certificateNode !== o.name).map((o) => o.name),
    };
  }

  /** Join tickets the running service has issued since it started, from its metrics. */
  async ticketsIssued(): Promise<number> {
    const text = await this.metrics();
    let issued = 0;
    for (const line of text.split('\n')) {
      if (
        line.startsWith('constellation_joinservice_tickets_total{') &&
        line.includes('kind="join"') &&
        line.includes('outcome="issued"')
      )
        issued += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return issued;
  }

  /** Runs the nodes `[first, end)` of the identities in `processes` node processes, all at once. */
  async storm(options: {
    first?: number;
    end?: number;
    processes?: number;
    /** In-flight nodes per process (0: all). */
    concurrency?: number;
    giveUpAfterMs?: number;
    /** Called once the storm started, with nothing awaited: fault injection goes here. */
    during?: (startedAtMs: number) => Promise<void>;
  }): Promise<StormResult> {
    const first = options.first ?? 0;
    const end = options.end ?? this.options.identities.length;
    const processes = Math.max(1, Math.min(options.processes ?? 2, end - first));
    const identitiesPath = join(this.options.dir, 'storm-identities.json');
    await saveSoftwareTpms(identitiesPath, this.options.identities);
    const share = Math.ceil((end - first) / processes);
    const children = await Promise.all(
      Array.from({ length: processes }, async (_, p) => {
        const orders: StormOrders = {
          identitiesPath,
          first: first + p * share,
          end: Math.min(end, first + (p + 1) * share),
          address: this.address,
          concurrency: options.concurrency ?? 0,
          startAtMs: 0,
          giveUpAfterMs: options.giveUpAfterMs ?? 120_000,
          giveUpAtMs: 0,
          requestTimeoutMs: 30_000,
          initialBackoffMs: 1_000,
          maxBackoffMs: 30_000,
        };
        const ordersPath = join(this.options.dir, `storm-orders-${p}.json`);
        await writeFile(ordersPath, JSON.stringify(orders));
        return startNodeProcess(ordersPath);
      }),
    );
    const serviceCpuAtGo = this.serviceCpuMs();
    const controlPlaneCpuAtGo = this.controlPlaneCpuMs();
    const driverCpuAtGo = process.cpuUsage();
    const startedAtMs = Date.now();
    for (const child of children) child.go(startedAtMs);
    const fault = options.during?.(startedAtMs);
    // Nodes give up at giveUpAfterMs; a process that still has not reported by then (and a
    // margin) is killed, so a storm fails with its reason instead of hanging.
    const bound = (options.giveUpAfterMs ?? 120_000) + REPORT_MARGIN_MS;
    const reports = await withTimeout(
      Promise.all(children.map((c) => c.done)),
      bound,
      'storm node processes to report from the start',
    ).catch((err: unknown) => {
      for (const child of children) child.kill();
      throw err;
    });
    await fault;
    const serviceCpuAtEnd = this.serviceCpuMs();
    const controlPlaneCpuAtEnd = this.controlPlaneCpuMs();
    const driver = process.cpuUsage(driverCpuAtGo);
    return new StormResult(reports.map((r) => r.outcomes).flat(), Date.now() - startedAtMs, {
      // Across a restart the process is another: its CPU is not comparable, so none is reported.
      service:
        serviceCpuAtGo === undefined || serviceCpuAtEnd === undefined || serviceCpuAtEnd.pid !== serviceCpuAtGo.pid
          ? undefined
          : serviceCpuAtEnd.ms - serviceCpuAtGo.ms,
      nodes: reports.reduce((sum, r) => sum + r.cpuMs, 0),
      controlPlane:
        controlPlaneCpuAtGo === undefined || controlPlaneCpuAtEnd === undefined
          ? undefined
          : controlPlaneCpuAtEnd - controlPlaneCpuAtGo,
      driver: (driver.user + driver.system) / 1000,
    });
  }

  /** CPU the JoinService process has used so far (Linux /proc), with its pid; undefined elsewhere. */
  private serviceCpuMs(): { pid: number; ms: number } | undefined {
    const pid = this.service?.pid;
    if (pid === undefined) return undefined;
    const ms = processCpuMs(pid);
    return ms === undefined ? undefined : { pid, ms };
  }

  /** CPU etcd, kube-apiserver, kube-controller-manager and kube-scheduler have used so far. */
  private controlPlaneCpuMs(): number | undefined {
    let total = 0;
    for (const { pid } of this.cluster.controlPlane.processes) {
      const ms = processCpuMs(pid);
      if (ms === undefined) return undefined;
      total += ms;
    }
    return total;
  }

  async close(): Promise<void> {
    try {
      await this.stopService();
      await this.proxy?.close();
      await this.registry.close();
    } finally {
      await this.cluster.stop();
    }
  }
}

/** CPU a process has used so far (Linux /proc), ms; undefined when it cannot be read. */
function processCpuMs(pid: number): number | undefined {
  try {
    // Fields after the command name: state is 3rd, utime 14th and stime 15th of the whole line.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * CLOCK_TICK_MS : undefined;
  } catch {
    return undefined;
  }
}

let nodesProgram: Promise<string> | undefined;

/**
 * The node processes' program, bundled once per run (as the bootstrapper ships): no TypeScript
 * loader between them and their start. Twice a node process started from the sources through tsx
 * never said ready, with nothing on stderr (cause unknown; see the report below).
 */
function stormNodesProgram(): Promise<string> {
  nodesProgram ??= (async () => {
    // One directory per process (and worker thread), removed at its exit; test workers may be
    // ended without one, so those of processes gone are removed here.
    for (const name of readdirSync(tmpdir())) {
      const pid = Number(/^constellation-storm-nodes-(\d+)-\d+$/.exec(name)?.[1]);
      if (Number.isInteger(pid) && !isRunning(pid)) rmSync(join(tmpdir(), name), { recursive: true, force: true });
    }
    const dir = join(tmpdir(), `constellation-storm-nodes-${process.pid}-${threadId}`);
    mkdirSync(dir, { recursive: true });
    process.once('exit', () => {
      rmSync(dir, { recursive: true, force: true });
    });
    const program = join(dir, 'storm-nodes.mjs');
    const root = repoRoot(SRC);
    await runChecked(process.execPath, [join(root, 'tools/build/bundle.mjs'), join(SRC, 'storm-nodes.ts'), program], {
      cwd: root,
      timeoutMs: 120_000,
    });
    return program;
  })();
  return nodesProgram;
}

/**
 * What a node process that does not answer is doing: Node's diagnostic report (asked for with
 * SIGUSR2), its JavaScript stack and the kinds of its libuv handles, for the error.
 */
async function diagnosticReport(child: ChildProcess, dir: string): Promise<string> {
  child.kill('SIGUSR2');
  for (let waited = 0; waited < 3_000; waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const file = (await readdir(dir)).find((name) => name.startsWith('report.') && name.endsWith('.json'));
    if (file === undefined) continue;
    try {
      const report = JSON.parse(await readFile(join(dir, file), 'utf8')) as {
        javascriptStack?: { message?: string; stack?: string[] };
        libuv?: { type?: string; is_active?: boolean }[];
      };
      const handles = (report.libuv ?? []).filter((h) => h.is_active === true).map((h) => h.type ?? '?');
      const stack = [report.javascriptStack?.message, ...(report.javascriptStack?.stack ?? [])].join(' | ');
      return `diagnostic report ${join(dir, file)}: JavaScript stack: ${stack}; active libuv handles: ${handles.join(', ')}`;
    } catch {
      // Still being written.
    }
  }
  return `no diagnostic report within 3 s (its main thread did not get to it); ${await nativeStacks(child.pid)}`;
}

/**
 * Every thread's native stack (gdb, where installed): what a process whose main thread cannot
 * even write a diagnostic report is blocked in. A node process hung so, asleep before it said
 * ready, in a storm of the bench (cause unknown).
 */
async function nativeStacks(pid: number | undefined): Promise<string> {
  if (pid === undefined || !existsSync('/usr/bin/gdb')) return 'no gdb for its native stacks';
  try {
    const { stdout } = await runChecked(
      '/usr/bin/gdb',
      ['-p', String(pid), '-batch', '-ex', 'thread apply all bt 12'],
      {
        timeoutMs: 30_000,
      },
    );
    const frames = stdout
      .toString()
      .split('\n')
      .filter((line) => /^(Thread |#\d)/.test(line));
    return `native stacks (gdb): ${frames.join(' | ').slice(0, 8_000)}`;
  } catch (err) {
    return `gdb could not read its native stacks: ${errorMessage(err)}`;
  }
}

/** The metrics port a "joinservice serving" log line names; undefined for a line that is not JSON. */
function metricsPortOf(line: string): number | undefined {
  try {
    const { metricsPort } = JSON.parse(line) as { metricsPort?: unknown };
    return typeof metricsPort === 'number' ? metricsPort : undefined;
  } catch {
    return undefined;
  }
}

/** One node process: ready once it loaded its identities; `go` starts its nodes; `done` has their outcomes. */
async function startNodeProcess(ordersPath: string): Promise<{
  go: (startAtMs: number) => void;
  kill: () => void;
  done: Promise<{ outcomes: NodeOutcome[]; cpuMs: number }>;
}> {
  // STORM_NODES_CPU_PROF_DIR: profile the node processes too, to see what the load generator costs.
  const profileDir = process.env['STORM_NODES_CPU_PROF_DIR'];
  const profile = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`];
  const reports = mkdtempSync(join(tmpdir(), 'constellation-storm-node-report-'));
  const diagnostics = ['--report-on-signal', '--report-signal=SIGUSR2', `--report-directory=${reports}`];
  const child = spawn(process.execPath, [...profile, ...diagnostics, await stormNodesProgram(), ordersPath], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const outcomes: NodeOutcome[] = [];
  let cpuMs = 0;
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  let ready: () => void = () => undefined;
  const isReady = new Promise<void>((resolve) => {
    ready = resolve;
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    const parsed = JSON.parse(line) as NodeOutcome | NodeProcessCpu | { ready: true };
    if ('ready' in parsed) ready();
    else if ('cpuMs' in parsed) cpuMs = parsed.cpuMs;
    else outcomes.push(parsed);
  });
  const done = new Promise<{ outcomes: NodeOutcome[]; cpuMs: number }>((resolve, reject) => {
    child.once('exit', (code) => {
      if (code === 0) resolve({ outcomes, cpuMs });
      else reject(new Error(`storm node process exited with ${code ?? 'a signal'}: ${stderr}`));
    });
  });
  // Preparing a node process's share (keys, CSRs) takes seconds; a process that never says ready
  // must fail the storm, not hang it.
  await withTimeout(
    Promise.race([isReady, done]),
    READY_TIMEOUT_MS,
    `storm node process ${ordersPath} to be ready`,
  ).catch(async (err: unknown) => {
    const report = await diagnosticReport(child, reports);
    child.kill('SIGKILL');
    throw new Error(`${errorMessage(err)}: ${stderr}; ${report}`, { cause: err });
  });
  rmSync(reports, { recursive: true, force: true });
  return {
    go: (startAtMs) => {
      child.stdin.end(JSON.stringify({ startAtMs }));
    },
    kill: () => child.kill('SIGKILL'),
    done,
  };
}

/** CPU used during a storm, ms: the JoinService process, all node processes, and this driver process. */
export interface StormCpu {
  service: number | undefined;
  nodes: number;
  /** The real control plane's processes (etcd, kube-apiserver, the controllers); undefined off Linux. */
  controlPlane: number | undefined;
  /** The registry and the bench's own bookkeeping (they share this process); the API server is apart. */
  driver: number;
}

/** What a storm's nodes reported. */
export class StormResult {
  constructor(
    readonly outcomes: readonly NodeOutcome[],
    readonly wallMs: number,
    readonly cpu: StormCpu,
  ) {}

  get joined(): NodeOutcome[] {
    return this.outcomes.filter((o) => o.joined);
  }

  get failed(): NodeOutcome[] {
    return this.outcomes.filter((o) => !o.joined);
  }

  /** Tickets per second from the start until the last node joined. */
  get joinsPerSecond(): number {
    const last = Math.max(...this.joined.map((o) => o.joinedAfterMs ?? 0));
    return this.joined.length / (last / 1000);
  }

  /** Duration of the successful call, ms. */
  callMs(q: number): number {
    return percentile(
      this.joined.map((o) => o.callMs ?? 0),
      q,
    );
  }

  /** From the storm's start to the node's ticket, ms (waits and retries included). */
  joinedAfterMs(q: number): number {
    return percentile(
      this.joined.map((o) => o.joinedAfterMs ?? 0),
      q,
    );
  }

  /** Failed attempts (later retried or not) by gRPC status. */
  get retries(): Record<string, number> {
    const total: Record<string, number> = {};
    for (const o of this.outcomes)
      for (const [code, n] of Object.entries(o.failures)) total[code] = (total[code] ?? 0) + n;
    return total;
  }
}
