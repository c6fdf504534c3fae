import { packageProject } from '../../vitest.shared.ts';

// A test that initialises a node starts a real control plane (kubeadm's phases, etcd,
// kube-apiserver, ...): 10 to 25 s alone on the 2-core machine, more while other files run.
export default packageProject('bootstrapper', { timeoutMs: 180_000 });
