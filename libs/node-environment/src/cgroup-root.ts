import { copyFile, mkdir, readFile, readdir, rmdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The host's cgroup hierarchies: these machines mount v1 controllers, and cgroup2 only at
 * /sys/fs/cgroup/unified. A node has its own cgroup root in each. Each node's kubelet puts its pods below
 * its own root: two kubelets sharing /kubepods kill each other's pods.
 */
export async function cgroupHierarchies(): Promise<string[]> {
  const mounts = await readFile('/proc/self/mounts', 'utf8');
  return mounts
    .split('\n')
    .map((line) => line.split(' '))
    .filter((fields) => fields[2] === 'cgroup' || fields[2] === 'cgroup2')
    .map((fields) => fields[1] ?? '')
    .filter((path) => path !== '');
}

/**
 * Creates `/<name>` in every hierarchy (runc also writes the cgroup2 one beside the v1 ones);
 * cpuset needs its CPUs and memory nodes before use.
 */
export async function createCgroupRoot(name: string): Promise<void> {
  for (const hierarchy of await cgroupHierarchies()) {
    const dir = join(hierarchy, name);
    await mkdir(dir, { recursive: true });
    if (hierarchy.endsWith('/cpuset')) {
      for (const file of ['cpuset.cpus', 'cpuset.mems']) await copyFile(join(hierarchy, file), join(dir, file));
    }
  }
}

async function cgroupTree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const below = await Promise.all(entries.filter((e) => e.isDirectory()).map((e) => cgroupTree(join(dir, e.name))));
  return [...below.flat(), dir];
}

/** The processes anywhere below the node's root (the pods' containers). */
export async function cgroupProcesses(name: string): Promise<number[]> {
  const pids = new Set<number>();
  for (const hierarchy of await cgroupHierarchies()) {
    for (const dir of await cgroupTree(join(hierarchy, name))) {
      const procs = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
      for (const line of procs.split('\n')) if (line !== '') pids.add(Number(line));
    }
  }
  return [...pids];
}

/** Removes the root and everything below it, deepest first; the processes must be gone already. */
export async function removeCgroupRoot(name: string): Promise<void> {
  for (const hierarchy of await cgroupHierarchies()) {
    for (const dir of await cgroupTree(join(hierarchy, name))) {
      await rmdir(dir).catch((err: unknown) => {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      });
    }
  }
}
