import { request } from 'node:https';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { initConfiguration, writeAdmissionConfiguration } from '@constellation/kubeadm';
import type { KubernetesPrograms } from '@constellation/kubernetes-programs';
import { logTail, startManagedProcess, stopManagedProcesses } from './managed-process.js';
import type { ManagedProcess } from './managed-process.js';
import { inNetworkNamespace } from './network-namespace.js';
import { isRunning, runProgram } from '@constellation/process';
import { staticPodCommand } from './static-pod-command.js';

/** kube-apiserver's port inside the control plane's network namespace (kubeadm's default). */
export const API_SERVER_PORT = 6443;

/** The control-plane static pods kubeadm writes, in the order they start. */
const COMPONENTS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;

export interface ControlPlaneOptions {
  programs: KubernetesPrograms;
  /** Holds kubeadm's root (`root/etc/kubernetes`, `root/var/lib/etcd`), the logs and `control-plane.json`. */
  dir: string;
  /**
   * The network namespace the control plane runs in (through nsenter), and its address there
   * (advertised, in certificates). Without a namespace it runs in this process's own network, for
   * a caller already inside the machine's namespace (a mini node).
   */
  network: { namespace?: string; ip: string };
  /** kubeadm's root (`--rootfs`); default `<dir>/root`. A node's own root when a node runs it. */
  root?: string;
  /**
   * The kubeadm configuration to run the phases with (a node's own `kubeadm init --config` file);
   * default: the one the bootstrapper would generate for `network.ip`. Its advertise address must
   * be `network.ip` and its bind port `apiServerPort`.
   */
  kubeadmConfig?: string;
  /** kube-apiserver's port (the configuration's bindPort; default 6443). */
  apiServerPort?: number;
  /**
   * Run `upload-config all` and `bootstrap-token` once the API server is ready, as kubeadm init
   * does (default true); false leaves them to the caller (`kubeadmInitPhase`).
   */
  uploadPhases?: boolean;
  /** Node name of the control-plane host (default "control-plane-0"). */
  nodeName?: string;
  /** Default "constellation". */
  clusterName?: string;
  /** Extra names and addresses for the API server certificate. */
  certSans?: readonly string[];
  /** Bound for everything up to `/readyz` and kubeadm's uploads (default 120 s). */
  startTimeoutMs?: number;
}

/** A running control plane: the real programs, started from kubeadm's own manifests. */
export interface ControlPlane {
  readonly release: string;
  /** `https://<ip>:6443`, reachable from the host through the namespace's link. */
  readonly apiServerUrl: string;
  readonly caCertificatePem: string;
  /** kubeadm's root: `etc/kubernetes/{pki,admin.conf,super-admin.conf,...}` under it. */
  readonly root: string;
  /** kubeadm's admin.conf (group kubeadm:cluster-admins, bound to cluster-admin by kubeadm). */
  readonly adminKubeconfig: string;
  /** kubeadm's super-admin.conf (system:masters). */
  readonly superAdminKubeconfig: string;
  readonly pkiDir: string;
  readonly processes: readonly ManagedProcess[];
  /**
   * Runs `kubeadm init phase <phase...>` on this control plane's root and configuration (in its
   * network namespace) and returns kubeadm's output.
   */
  kubeadmInitPhase(...phase: string[]): Promise<string>;
  /** Stops every process it started; safe to call twice. */
  stop(): Promise<void>;
}

/** What `control-plane.json` holds, so that another process (mini down) can stop it. */
interface ControlPlaneState {
  release: string;
  apiServerUrl: string;
  processes: ManagedProcess[];
}

const KUBEADM_CONFIG = 'kubeadm.yaml';

/**
 * Starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler as processes in
 * `network.namespace` (or in this process's network when none is named), each with the command
 * line from the static-pod manifest that real kubeadm generates (`kubeadm init phase certs,
 * kubeconfig, etcd local, control-plane`, with `--rootfs` so that it writes under its root), from
 * `kubeadmConfig` or the kubeadm configuration the bootstrapper generates.
 * Once `/readyz` answers it runs `upload-config` and `bootstrap-token` as kubeadm init does.
 * On any failure it stops what it started and names the program with the end of its log.
 */
export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const root = options.root ?? join(options.dir, 'root');
  const logs = join(options.dir, 'logs');
  await mkdir(join(root, 'etc', 'kubernetes'), { recursive: true });
  await mkdir(join(root, 'var', 'lib', 'etcd'), { recursive: true, mode: 0o700 });
  await mkdir(logs, { recursive: true });
  const deadline = Date.now() + (options.startTimeoutMs ?? 120_000);
  const port = options.apiServerPort ?? API_SERVER_PORT;
  const apiServerUrl = `https://${options.network.ip}:${port}`;
  const config =
    options.kubeadmConfig ??
    initConfiguration({
      nodeName: options.nodeName ?? 'control-plane-0',
      nodeIp: options.network.ip,
      bindPort: port,
      clusterName: options.clusterName ?? 'constellation',
      kubernetesVersion: options.programs.release,
      controlPlaneEndpoint: `${options.network.ip}:${port}`,
      certSans: options.certSans ?? [],
      kubeProxy: false,
    });
  // The API server's admission configuration, where the generated configuration names it.
  await writeAdmissionConfiguration(join(root, 'etc', 'kubernetes'));
  // It names a bootstrap token (one that cannot join): 0600 like every file holding a secret.
  await writeFile(join(root, KUBEADM_CONFIG), config, { mode: 0o600 });
  const inNetwork = (program: string, args: readonly string[]): [string, string[]] => {
    const namespace = options.network.namespace;
    return namespace === undefined ? [program, [...args]] : inNetworkNamespace({ name: namespace }, program, args);
  };
  const kubeadm = async (args: string[], timeoutMs = Math.max(1000, deadline - Date.now())): Promise<string> => {
    const [program, programArgs] = inNetwork(options.programs.path('kubeadm'), [
      '--rootfs',
      root,
      ...args,
      '--config',
      `/${KUBEADM_CONFIG}`,
    ]);
    const { stdout, stderr } = await runProgram(program, programArgs, { timeoutMs });
    return stdout + stderr;
  };
  for (const phase of [
    ['certs', 'all'],
    ['kubeconfig', 'all'],
    ['etcd', 'local'],
    ['control-plane', 'all'],
  ]) {
    await kubeadm(['init', 'phase', ...phase]);
  }

  const started: ManagedProcess[] = [];
  const state = (): ControlPlaneState => ({ release: options.programs.release, apiServerUrl, processes: started });
  const stop = async (): Promise<void> => {
    await stopManagedProcesses(started);
  };
  try {
    for (const component of COMPONENTS) {
      const manifest = await readFile(join(root, 'etc', 'kubernetes', 'manifests', `${component}.yaml`), 'utf8');
      const command = staticPodCommand(manifest, root);
      if (command.program !== component) {
        throw new Error(`kubeadm's ${component}.yaml runs ${command.program}, not ${component}`);
      }
      started.push(
        await startManagedProcess(
          component,
          inNetwork(options.programs.path(component), command.args),
          join(logs, `${component}.log`),
        ),
      );
      await writeFile(join(options.dir, 'control-plane.json'), `${JSON.stringify(state(), null, 2)}\n`);
    }
    const caCertificatePem = await readFile(join(root, 'etc', 'kubernetes', 'pki', 'ca.crt'), 'utf8');
    await waitForReady(apiServerUrl, caCertificatePem, started, deadline);
    if (options.uploadPhases !== false) {
      await kubeadm(['init', 'phase', 'upload-config', 'all']);
      await kubeadm(['init', 'phase', 'bootstrap-token']);
    }
    return {
      release: options.programs.release,
      apiServerUrl,
      caCertificatePem,
      root,
      adminKubeconfig: join(root, 'etc', 'kubernetes', 'admin.conf'),
      superAdminKubeconfig: join(root, 'etc', 'kubernetes', 'super-admin.conf'),
      pkiDir: join(root, 'etc', 'kubernetes', 'pki'),
      processes: started,
      kubeadmInitPhase: (...phase) => kubeadm(['init', 'phase', ...phase], 120_000),
      stop,
    };
  } catch (error) {
    const exited = started.filter((p) => !isRunning(p.pid));
    const detail = await Promise.all(
      exited.map(async (p) => `${p.program} exited; the end of its log:\n${await logTail(p.logFile)}`),
    );
    await stop();
    if (detail.length === 0) throw error;
    throw new Error(`the control plane did not start: ${(error as Error).message}\n${detail.join('\n')}`, {
      cause: error,
    });
  }
}

/** Stops the control plane whose `control-plane.json` is in `dir` (mini down, a crashed test run). */
export async function stopControlPlaneIn(dir: string): Promise<void> {
  const text = await readFile(join(dir, 'control-plane.json'), 'utf8').catch(() => undefined);
  if (text === undefined) return;
  const state = JSON.parse(text) as ControlPlaneState;
  await stopManagedProcesses(state.processes);
}

/** Polls `/readyz` (anonymous: kubeadm's RBAC lets anyone read it) until 200 or a component exits. */
async function waitForReady(
  url: string,
  ca: string,
  processes: readonly ManagedProcess[],
  deadline: number,
): Promise<void> {
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    const gone = processes.find((p) => !isRunning(p.pid));
    if (gone !== undefined) throw new Error(`${gone.program} exited while the API server was starting`);
    last = await readyz(url, ca).catch((error: unknown) => (error as Error).message);
    if (last === 'ok') return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`kube-apiserver at ${url} was not ready in time (last /readyz: ${last.slice(0, 500)})`);
}

function readyz(url: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/readyz`, { ca, timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      res.on('end', () => {
        resolve(res.statusCode === 200 ? 'ok' : `HTTP ${String(res.statusCode)}: ${body.trim()}`);
      });
    });
    req.once('timeout', () => req.destroy(new Error('/readyz did not answer within 2 s')));
    req.once('error', reject);
    req.end();
  });
}
