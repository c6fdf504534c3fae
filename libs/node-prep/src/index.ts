export { DEFAULT_INSTALL_DIRS } from './install-policy.js';

export { DEFAULT_SERIAL_PATH, prepareNode } from './node-preparation.js';
export { OS_UPDATE_STAGED_EXIT_CODE } from './os-update-hook.js';
export { KUBELET_MAX_MINORS_BEHIND, kubeletSkewProblem, kubeletWithinSkew } from './version-skew.js';
export { DEFAULT_MINIMUM_KUBERNETES_VERSION } from './version-discovery.js';
export { DEFAULT_VERSION_RECORD_PATH } from './version-record.js';
