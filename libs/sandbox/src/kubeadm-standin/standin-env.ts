/*
 * How whoever installs the kubeadm stand-in as `kubeadm` (the bootstrapper's test fixtures, mini)
 * tells it what it cannot guess: where the built Kubernetes programs are, and for a node that does
 * not run in a network namespace of its own, which one its control plane runs in.
 */

/** The directory of the built programs (what `node tools/kubernetes/build.mjs` prints). */
export const BIN_DIR_ENV = 'KUBEADM_STANDIN_BIN_DIR';
/** A network namespace (/run/netns/NAME) the control plane runs in; unset: the stand-in's own network. */
export const NETNS_ENV = 'KUBEADM_STANDIN_NETNS';
