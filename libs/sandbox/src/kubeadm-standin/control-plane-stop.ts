import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { standinPaths } from './paths.js';

/*
 * Stops the control plane the stand-in's init started under a node's root. It reads the state
 * file @constellation/control-plane writes (control-plane.json: each program's process group)
 * rather than importing that package: this file is part of libs/sandbox's library build, which
 * must not need control-plane's (that package's build needs libs/kubeadm's, whose tests need
 * this one: a cycle in the build graph).
 */

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const signal = (pid: number, name: NodeJS.Signals): void => {
  try {
    process.kill(-pid, name);
  } catch {
    try {
      process.kill(pid, name);
    } catch {
      // already gone
    }
  }
};

/**
 * Stops the programs of the control plane `kubeadm init` started under `root`, the last started
 * first (kube-apiserver's shutdown waits on etcd): SIGTERM, then SIGKILL after `graceMs`, each
 * one gone before the next. Returns whether any was running.
 */
export async function stopApiServer(root: string, graceMs = 10_000): Promise<boolean> {
  const text = await readFile(join(standinPaths(root).run, 'control-plane.json'), 'utf8').catch(() => undefined);
  if (text === undefined) return false;
  const pids = ((JSON.parse(text) as { processes?: { pid?: unknown }[] }).processes ?? [])
    .map((p) => p.pid)
    .filter((pid): pid is number => typeof pid === 'number' && pid > 0);
  const running = pids.filter(isRunning).reverse();
  for (const pid of running) {
    signal(pid, 'SIGTERM');
    if (!(await gone(pid, graceMs))) {
      signal(pid, 'SIGKILL');
      await gone(pid, 5_000);
    }
  }
  return running.length > 0;
}

async function gone(pid: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (isRunning(pid)) {
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}
