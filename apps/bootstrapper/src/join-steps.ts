/**
 * The steps of a join, in the order the node runs them, as init's are named by `InitStep`. The
 * first two repeat until a ticket arrives and commit nothing; `lock-node` is the point of no
 * return; every step after it either finishes or ends in the fatal path (disk reset, reboot).
 * The node's log names each step as it starts and ends, and `join-status.json` says which one
 * the node is at (docs/bootstrapper.md).
 */
export const JOIN_STEPS = {
  'request-ticket': "read this machine's metadata, make the kubelet's two keys, attest and ask for a ticket",
  'check-ticket': "check that the ticket's certificates fit the keys and its Kubernetes version is not below the floor",
  'lock-node': 'take the node lock and extend PCR 15 with the cluster ID: the point of no return',
  'rekey-state-disk': "replace the state disk's first-boot passphrase with the ticket's disk key",
  'write-credentials': "write the kubelet's client and serving certificates, and a control plane's shared PKI",
  'prepare-node': "install the ticket's Kubernetes release (kubeadm, kubelet) from the signed manifest",
  'kubeadm-join': "run kubeadm join with the ticket's CA and the kubelet's certificate (file discovery)",
  'write-node-state':
    'mark the state disk as the cluster’s (disk receipt) and write the node state (role, measurement salt, cluster ID): from here a reboot rejoins; before, it starts over',
  'start-kubelet': 'record that Kubernetes is configured and start the kubelet',
} as const;

export type JoinStep = keyof typeof JOIN_STEPS;

/** The steps in order. */
export const JOIN_STEP_ORDER = Object.keys(JOIN_STEPS) as JoinStep[];
