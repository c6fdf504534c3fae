import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathExists } from '@constellation/files';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { reset } from './commands.js';

// kubeadm reset's cleanup-node phase (cmd/kubeadm/app/cmd/phases/reset/cleanupnode.go
// runCleanupNode, resetConfigDir, CleanDir): the contents of /etc/kubernetes/manifests, of the
// kubelet's directory /var/lib/kubelet and of the certificates directory go, the directories
// stay; then admin.conf, kubelet.conf, bootstrap-kubelet.conf, controller-manager.conf and
// scheduler.conf (super-admin.conf too, since 1.29). Other files under /etc/kubernetes stay.

describe('kubeadm reset', () => {
  it('runCleanupNode: empties the manifests, kubelet and certificates directories and removes kubeadm kubeconfigs only', async () => {
    const root = await tempDirForTest();
    const files = [
      'etc/kubernetes/manifests/kube-apiserver.yaml',
      'etc/kubernetes/pki/ca.crt',
      'etc/kubernetes/pki/etcd/ca.crt',
      'var/lib/kubelet/pki/kubelet-client-current.pem',
      'var/lib/kubelet/config.yaml',
      'var/lib/kubelet/kubeadm-flags.env',
      'etc/kubernetes/admin.conf',
      'etc/kubernetes/super-admin.conf',
      'etc/kubernetes/kubelet.conf',
      'etc/kubernetes/bootstrap-kubelet.conf',
      'etc/kubernetes/controller-manager.conf',
      'etc/kubernetes/scheduler.conf',
      'etc/kubernetes/known-tokens.csv',
    ];
    for (const file of files) {
      await mkdir(join(root, file, '..'), { recursive: true });
      await writeFile(join(root, file), 'x');
    }
    await reset(root, () => undefined);
    for (const dir of ['etc/kubernetes/manifests', 'var/lib/kubelet', 'etc/kubernetes/pki'])
      expect(await readdir(join(root, dir))).toEqual([]);
    expect(await readdir(join(root, 'etc/kubernetes'))).toEqual(['known-tokens.csv', 'manifests', 'pki'].sort());
    expect(await pathExists(join(root, 'etc/kubernetes/known-tokens.csv'))).toBe(true);
  });
});
