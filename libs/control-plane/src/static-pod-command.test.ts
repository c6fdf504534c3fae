import { describe, expect, it } from 'vitest';
import { relocateHostPaths, staticPodCommand } from './static-pod-command.js';

const MANIFEST = `apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - command:
    - etcd
    - --data-dir=/var/lib/etcd
    - --cert-file=/etc/kubernetes/pki/etcd/server.crt
    - --listen-client-urls=https://127.0.0.1:2379,https://10.43.0.2:2379
    image: registry.k8s.io/etcd:3.7.0-0
    name: etcd
`;

describe('staticPodCommand', () => {
  it('returns the program and moves kubeadm host paths under the root, and nothing else', () => {
    expect(staticPodCommand(MANIFEST, '/tmp/cp')).toEqual({
      program: 'etcd',
      args: [
        '--data-dir=/tmp/cp/var/lib/etcd',
        '--cert-file=/tmp/cp/etc/kubernetes/pki/etcd/server.crt',
        '--listen-client-urls=https://127.0.0.1:2379,https://10.43.0.2:2379',
      ],
    });
  });

  it('leaves paths that only start like a host path alone', () => {
    expect(relocateHostPaths('--x=/etc/kubernetes-other/a', '/r')).toBe('--x=/etc/kubernetes-other/a');
    expect(relocateHostPaths('--x=/etc/kubernetes', '/r')).toBe('--x=/r/etc/kubernetes');
    expect(relocateHostPaths('--x=/a,/etc/kubernetes/b', '/r')).toBe('--x=/a,/r/etc/kubernetes/b');
  });

  it('refuses what is not one of kubeadm control-plane pods, saying why', () => {
    expect(() => staticPodCommand('kind: Deployment\n', '/r')).toThrow('the manifest is not a Pod');
    expect(() => staticPodCommand('kind: Pod\nspec:\n  containers: []\n', '/r')).toThrow('has 0 containers');
    expect(() => staticPodCommand('kind: Pod\nspec:\n  containers:\n  - command: [1]\n', '/r')).toThrow(
      'no command of strings',
    );
  });
});
