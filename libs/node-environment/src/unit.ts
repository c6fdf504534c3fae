/**
 * A unit as the node's unit runner runs it: the part of a systemd service unit that the node's
 * programs rely on (ExecStart with $VARIABLE expansion, Environment, EnvironmentFile,
 * ConditionPathExists, Restart and RestartSec).
 */
export interface UnitSpec {
  name: string;
  /** Program and arguments; a word `$NAME` expands to the words of that variable, `${NAME}` to one word. */
  exec: string[];
  env?: Record<string, string>;
  /** Read at every start, in order, later files winning; a missing required file fails the start. */
  environmentFiles?: { path: string; required: boolean }[];
  /** Start only once this file exists; before that a start request leaves the unit inactive. */
  conditionPathExists?: string;
  /** Started when the node boots (systemd's "enabled"); otherwise only on request. */
  startAtBoot: boolean;
  restart: 'always' | 'on-failure' | 'no';
  restartDelayMs: number;
}

/** What the runner of one node reads at its start. */
export interface UnitsFile {
  /** The control socket the node's `systemctl` talks to. */
  socket: string;
  /** Directory of the units' logs, one file each. */
  logs: string;
  /** Environment every unit starts from (PATH first of all). */
  env: Record<string, string>;
  units: UnitSpec[];
}

/** Parses an EnvironmentFile: KEY=value lines, values optionally in double or single quotes. */
export function parseEnvironmentFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    const key = line.slice(0, eq).trim();
    let value = line.slice(eq + 1).trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0])) {
      value = value.slice(1, -1);
    }
    env[key] = value;
  }
  return env;
}

/** ExecStart's expansion: `$NAME` becomes the variable's words, `${NAME}` one word; unset is empty. */
export function expandCommandLine(words: readonly string[], env: Record<string, string>): string[] {
  return words.flatMap((word) => {
    const split = /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(word);
    if (split?.[1] !== undefined) return (env[split[1]] ?? '').split(/\s+/).filter((w) => w !== '');
    const whole = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(word);
    if (whole?.[1] !== undefined) return [env[whole[1]] ?? ''];
    return [word];
  });
}

/**
 * The kubelet as kubeadm's systemd drop-in starts it: the kubeconfig and config arguments, the
 * flags kubeadm writes to /var/lib/kubelet/kubeadm-flags.env, and node preparation's
 * /etc/kubernetes/kubelet.env, without which it does not start.
 */
export function kubeletUnit(kubelet: string): UnitSpec {
  return {
    name: 'kubelet',
    exec: [kubelet, '$KUBELET_KUBECONFIG_ARGS', '$KUBELET_CONFIG_ARGS', '$KUBELET_KUBEADM_ARGS', '$KUBELET_EXTRA_ARGS'],
    env: {
      KUBELET_KUBECONFIG_ARGS:
        '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf',
      KUBELET_CONFIG_ARGS: '--config=/var/lib/kubelet/config.yaml',
    },
    environmentFiles: [
      { path: '/etc/kubernetes/kubelet.env', required: true },
      { path: '/var/lib/kubelet/kubeadm-flags.env', required: false },
    ],
    conditionPathExists: '/etc/kubernetes/kubelet.env',
    // Not enabled: the bootstrapper starts it once the node belongs to a cluster, at every boot
    // (after a rejoin or a recovery; its credentials are the cluster's to give).
    startAtBoot: false,
    restart: 'always',
    restartDelayMs: 2_000,
  };
}

/** containerd as its unit starts it. */
export function containerdUnit(containerd: string, config: string): UnitSpec {
  return {
    name: 'containerd',
    exec: [containerd, '--config', config],
    startAtBoot: true,
    restart: 'always',
    restartDelayMs: 1_000,
  };
}
