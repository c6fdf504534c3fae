import { DEFAULT_SERIAL_PATH, DEFAULT_VERSION_RECORD_PATH } from '@constellation/node-prep';

/** constellation-node-prep's documented defaults; the systemd unit in deploy/node-prep relies on them. */
export const NODE_PREP_DEFAULTS = {
  root: '/',
  apiServerCa: '/etc/kubernetes/pki/ca.crt',
  manifestUrl:
    'https://artifacts.constellation.invalid/manifests/{{.Board}}/{{.OSVersion}}/{{.KubernetesVersion}}.json',
  keyring: '/etc/constellation/pubring.asc',
  versionSeed: '/etc/kubernetes/installer/kubelet.env',
  kubeletEnvPath: '/etc/kubernetes/kubelet.env',
  serialFile: DEFAULT_SERIAL_PATH,
  versionRecord: DEFAULT_VERSION_RECORD_PATH,
  osRelease: '/usr/lib/os-release',
  rebootCommand: 'systemctl reboot',
  fetchTries: 5,
  /** Between download tries, and one deadline for each whole download (all tries). */
  fetchPauseMs: 5_000,
  fetchDeadlineMs: 15 * 60_000,
  /** Asking the API server for /version: few tries, short deadline; the seed file is the fallback. */
  apiRetry: { tries: 3, pauseMs: 10_000, timeoutMs: 10_000 },
} as const;
