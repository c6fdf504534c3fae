import { describe, expect, it } from 'vitest';
import { expandCommandLine, kubeletUnit, parseEnvironmentFile } from './unit.js';

describe('units as systemd reads them', () => {
  it('reads an EnvironmentFile: quotes removed, comments and malformed lines skipped', () => {
    expect(
      parseEnvironmentFile(
        [
          '# kubeadm writes this',
          'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=10.42.7.10"',
          "SINGLE='a b'",
          'PLAIN=value=with=equals',
          'not a line',
          '',
        ].join('\n'),
      ),
    ).toEqual({
      KUBELET_KUBEADM_ARGS: '--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=10.42.7.10',
      SINGLE: 'a b',
      PLAIN: 'value=with=equals',
    });
  });

  it('expands $NAME to its words and ${NAME} to one word, as ExecStart does; unset is nothing', () => {
    expect(expandCommandLine(['prog', '$A', '${A}', '$UNSET', 'x$A'], { A: '--one  --two' })).toEqual([
      'prog',
      '--one',
      '--two',
      '--one  --two',
      'x$A',
    ]);
  });

  it("starts the kubelet with kubeadm's drop-in arguments and flags file, only once node preparation is done", () => {
    const unit = kubeletUnit('/run/state/bin/kubelet');
    const env = {
      ...unit.env,
      ...parseEnvironmentFile('KUBELET_KUBEADM_ARGS="--node-ip=10.42.7.10"\n'),
    };
    expect(expandCommandLine(unit.exec, env)).toEqual([
      '/run/state/bin/kubelet',
      '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf',
      '--kubeconfig=/etc/kubernetes/kubelet.conf',
      '--config=/var/lib/kubelet/config.yaml',
      '--node-ip=10.42.7.10',
    ]);
    expect(unit.conditionPathExists).toBe('/etc/kubernetes/kubelet.env');
    // The bootstrapper starts it once the node belongs to a cluster, not the boot.
    expect(unit.startAtBoot).toBe(false);
  });
});
