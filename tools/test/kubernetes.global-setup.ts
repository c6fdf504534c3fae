// One real control plane for the whole test run (the root vitest.config.ts names this file):
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler built by
// tools/kubernetes/build.mjs, started from kubeadm's own manifests in a network namespace of the
// run's own (test-control-plane.ts). Started only when the run includes a package that talks to
// Kubernetes, and stopped when the run ends, however it ends. Every package gets the programs'
// directory (`kubernetesPrograms`), which is built here when the machine has no build yet.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import type { SharedKubernetes } from '@constellation/testing';

/** The vitest projects whose tests talk to the shared control plane. */
const KUBERNETES_PROJECTS = new Set([
  'control-plane',
  'kubernetes-programs',
  'kubeadm',
  'joinservice',
  'bootstrapper',
  'cli',
  'node-prep',
  'packaging',
]);

const root = join(import.meta.dirname, '..', '..');

/** Builds the programs and the node images when this machine has not yet (with progress), and returns the programs' directory. */
function kubernetesBinDir(): string {
  const result = spawnSync(process.execPath, [join(root, 'tools', 'kubernetes', 'build.mjs')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error('building the Kubernetes programs failed (see above)');
  // The images mini's nodes carry, from those programs (about 15 s the first time).
  const images = spawnSync(process.execPath, [join(root, 'tools', 'kubernetes', 'images.mjs')], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (images.status !== 0) throw new Error("building the nodes' container images failed (see above)");
  return result.stdout.trim();
}

const controlPlaneArgs = (args: readonly string[]): string[] => [
  '--conditions=@constellation/source',
  '--import',
  'tsx',
  join(import.meta.dirname, 'test-control-plane.ts'),
  ...args,
];

/** Runs test-control-plane.ts and waits for it: for `up`, before any worker exists, and on exit. */
function controlPlaneCommandSync(args: readonly string[]): void {
  const result = spawnSync(process.execPath, controlPlaneArgs(args), {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
    timeout: 180_000,
  });
  if (result.status !== 0) throw new Error(`test-control-plane.ts ${args[0] ?? ''} failed (see above)`);
}

/**
 * The same without blocking: the teardown runs while vitest still waits for its workers to exit,
 * and a blocked event loop made it report them as hanging.
 */
function controlPlaneCommand(args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, controlPlaneArgs(args), {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`test-control-plane.ts ${args[0] ?? ''} exited with ${String(code)} (see above)`));
    });
  });
}

export default function startSharedControlPlane(project: TestProject): () => Promise<void> {
  const binDir = kubernetesBinDir();
  project.provide('kubernetesBinDir', binDir);
  if (!project.vitest.projects.some((p) => KUBERNETES_PROJECTS.has(p.name))) {
    project.provide('kubernetes', null);
    return () => Promise.resolve();
  }
  const dir = mkdtempSync(join(tmpdir(), 'constellation-control-plane-'));
  let stopped = false;
  // Whatever ends the run, the programs go with it.
  const stopOnExit = (): void => {
    if (!stopped) controlPlaneCommandSync(['down', dir]);
  };
  process.once('exit', stopOnExit);
  controlPlaneCommandSync(['up', dir, binDir]);
  project.provide('kubernetes', JSON.parse(readFileSync(join(dir, 'shared.json'), 'utf8')) as SharedKubernetes);
  return async () => {
    stopped = true;
    process.removeListener('exit', stopOnExit);
    await controlPlaneCommand(['down', dir]);
  };
}
