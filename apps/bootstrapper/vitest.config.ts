import { packageProject } from '../../vitest.shared.ts';

// A test that initialises a node runs the real kubeadm init on a machine of its own (namespaces,
// containerd, the kubelet; see src/test-machine.fixture.ts), whose control plane runs as static
// pods: 20 to 40 s alone on the 2-core machine, more while other files run. The machines' unit
// runner is built before any test starts.
export default packageProject('bootstrapper', {
  timeoutMs: 180_000,
  globalSetup: ['src/node-programs.global-setup.ts'],
});
