import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MemoryLogger } from '@constellation/logger/testing';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { kubeadmJoin } from './kubeadm-driver.js';
import type { KubeadmRunner } from './kubeadm-driver.js';
import { RecentLog } from './recent-log.js';

const JOIN = {
  nodeName: 'worker-1',
  nodeIp: '10.42.0.5',
  discovery: {
    apiServerEndpoint: '10.42.0.2:6443',
    caCertificatePem: 'CA PEM',
    clientCertificatePem: 'CERTIFICATE PEM',
    clientKeyPem: 'KEY PEM',
  },
};

/**
 * A kubeadm that counts its runs in `runs` and plays `script` (POSIX sh, $KUBERNETES_DIR set):
 * what a failing join leaves behind.
 */
async function fakeKubeadm(script: string): Promise<{ runner: KubeadmRunner; runs: () => Promise<number> }> {
  const dir = await tempDirForTest();
  const program = join(dir, 'kubeadm');
  const count = join(dir, 'runs');
  await writeFile(count, '');
  await writeFile(program, `#!/bin/sh\necho run >> "${count}"\n${script}\n`, { mode: 0o755 });
  const kubernetesDir = join(dir, 'etc-kubernetes');
  const runner: KubeadmRunner = {
    kubeadm: { program, env: { ...process.env, KUBERNETES_DIR: kubernetesDir }, timeoutMs: 10_000 },
    kubeadmDir: join(dir, 'run-kubeadm'),
    kubernetesDir,
    logger: new MemoryLogger(),
    recentLog: new RecentLog(),
  };
  return { runner, runs: async () => (await readFile(count, 'utf8')).split('\n').filter(Boolean).length };
}

describe('kubeadmJoin', () => {
  it('retries a join that failed before kubelet-start (discovery writes nothing)', async () => {
    const { runner, runs } = await fakeKubeadm(
      `[ "$(wc -l < "$(dirname "$0")/runs")" -ge 2 ] && exit 0\necho "couldn't validate the identity of the API Server" >&2; exit 1`,
    );
    await kubeadmJoin(runner, JOIN);
    expect(await runs()).toBe(2);
  });

  it('joins by a discovery file of the ticket’s CA and kubelet credential, 0600 while kubeadm runs, gone after', async () => {
    // The fake kubeadm keeps what it was given: the file its configuration names, and that file's mode.
    const { runner } = await fakeKubeadm(`
config="$3"
file="$(sed -n 's/^ *kubeConfigPath: //p' "$config")"
stat -c %a "$file" > "$KUBERNETES_DIR.mode" && cp "$file" "$KUBERNETES_DIR.discovery"`);
    await kubeadmJoin(runner, JOIN);
    expect((await readFile(`${runner.kubernetesDir}.mode`, 'utf8')).trim()).toBe('600');
    const discovery = JSON.parse(await readFile(`${runner.kubernetesDir}.discovery`, 'utf8')) as {
      clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
      users: { user: Record<string, string> }[];
    };
    const decoded = (value: string | undefined): string => Buffer.from(value ?? '', 'base64').toString();
    expect(discovery.clusters[0]?.cluster.server).toBe('https://10.42.0.2:6443');
    expect(decoded(discovery.clusters[0]?.cluster['certificate-authority-data'])).toBe('CA PEM');
    expect(decoded(discovery.users[0]?.user['client-certificate-data'])).toBe('CERTIFICATE PEM');
    expect(decoded(discovery.users[0]?.user['client-key-data'])).toBe('KEY PEM');
    expect(discovery.users[0]?.user['token']).toBeUndefined();
    // The kubelet's key is in bootstrap-kubelet.conf now (kubeadm embeds it); this copy is removed.
    expect(await readdir(runner.kubeadmDir)).toEqual(['kubeadm-join.yaml']);
  });

  it('does not repeat a join that got to kubelet-start, and throws that failure, not the preflight refusal a retry gets', async () => {
    // As kubeadm does (preflight FileAvailable checks; kubelet-start writes bootstrap-kubelet.conf).
    const { runner, runs } = await fakeKubeadm(`
if [ -e "$KUBERNETES_DIR/bootstrap-kubelet.conf" ]; then
  echo "[preflight] FileAvailable--etc-kubernetes-bootstrap-kubelet.conf: already exists" >&2; exit 1
fi
mkdir -p "$KUBERNETES_DIR" && touch "$KUBERNETES_DIR/bootstrap-kubelet.conf"
echo "error execution phase kubelet-start: timed out waiting for the condition" >&2; exit 1`);
    await expect(kubeadmJoin(runner, JOIN)).rejects.toThrow(/kubelet-start: timed out waiting for the condition/);
    expect(await runs()).toBe(1);
  });
});
