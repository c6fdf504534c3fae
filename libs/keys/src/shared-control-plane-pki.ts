/**
 * The cluster PKI files (relative to the PKI directory) that every control-plane node must share:
 * the JoinService sends them in a control-plane join ticket, and `kubeadm join --control-plane`
 * requires them to be in place.
 */
export const SHARED_CONTROL_PLANE_PKI_FILES = [
  'ca.crt',
  'ca.key',
  'sa.key',
  'sa.pub',
  'front-proxy-ca.crt',
  'front-proxy-ca.key',
  'etcd/ca.crt',
  'etcd/ca.key',
] as const;
