import { spawn } from 'node:child_process';
import { mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import { CertificateAuthority } from '@constellation/keys';
import { KubeApiServer } from '../kube-api-server.js';
import { standinPaths } from './paths.js';

interface ApiServerState {
  pid: number;
  port: number;
  host: string;
}

/**
 * Runs the API server stand-in in this process until SIGTERM (the `serve-apiserver` command):
 * what the kubelet's kube-apiserver and kube-controller-manager static pods are for a real
 * control plane.
 */
export async function serveApiServer(root: string, host: string, port: number, gitVersion: string): Promise<void> {
  const paths = standinPaths(root);
  const cert = await readFile(`${paths.pki}/apiserver.crt`, 'utf8');
  const key = await readFile(`${paths.pki}/apiserver.key`, 'utf8');
  const caPem = await readFile(`${paths.pki}/ca.crt`, 'utf8');
  const caKey = await readFile(`${paths.pki}/ca.key`, 'utf8');
  // kube-apiserver as kubeadm configures it: client certificates chaining to the cluster CA,
  // bootstrap tokens, Node+RBAC; kube-controller-manager signing with the same CA.
  const api = await KubeApiServer.start(
    {
      tls: { cert, key },
      gitVersion,
      authentication: { clientCaPem: caPem, bootstrapTokens: true, tokenAuthFile: paths.tokenAuthFile },
      clusterCa: await CertificateAuthority.fromPem(caPem, caKey),
    },
    port,
    host,
  );
  await mkdir(paths.run, { recursive: true });
  const state: ApiServerState = { pid: process.pid, port, host };
  await writeFile(paths.apiServerState, JSON.stringify(state));
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await api.close();
  await rm(paths.apiServerState, { force: true });
}

/** Starts `serve-apiserver` as a detached process (it outlives `kubeadm init`, like a static pod). */
export async function spawnApiServer(root: string, host: string, port: number, gitVersion: string): Promise<void> {
  const paths = standinPaths(root);
  await mkdir(paths.run, { recursive: true });
  const log = await open(paths.apiServerLog, 'a');
  const script = process.argv[1] ?? '';
  const child = spawn(
    process.execPath,
    [
      ...process.execArgv,
      script,
      'serve-apiserver',
      '--host',
      host,
      '--port',
      String(port),
      '--version-string',
      gitVersion,
    ],
    {
      detached: true,
      stdio: ['ignore', log.fd, log.fd],
      env: process.env,
    },
  );
  child.unref();
  await log.close();
}

/** Stops the API server stand-in of `root`, if one runs. Returns whether one was stopped. */
export async function stopApiServer(root: string, timeoutMs = 5_000): Promise<boolean> {
  const paths = standinPaths(root);
  let state: ApiServerState;
  try {
    state = JSON.parse(await readFile(paths.apiServerState, 'utf8')) as ApiServerState;
  } catch {
    return false;
  }
  try {
    process.kill(state.pid, 'SIGTERM');
  } catch {
    await rm(paths.apiServerState, { force: true });
    return false;
  }
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      process.kill(state.pid, 0);
    } catch {
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  process.kill(state.pid, 'SIGKILL');
  await rm(paths.apiServerState, { force: true });
  return true;
}
