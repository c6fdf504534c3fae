import { writeFile } from 'node:fs/promises';
import type { KubernetesPrograms } from './kubernetes-programs.js';
import { ProgramFailed, runProgram } from '@constellation/process';

/** The built kubectl with one kubeconfig: what mini and tests drive the real API server with. */
export class Kubectl {
  readonly kubectlPath: string;
  readonly kubeconfig: string;
  private readonly timeoutMs: number;

  constructor(programs: Pick<KubernetesPrograms, 'path'>, kubeconfig: string, options: { timeoutMs?: number } = {}) {
    this.kubectlPath = programs.path('kubectl');
    this.kubeconfig = kubeconfig;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** Runs kubectl; a non-zero exit is a ProgramFailed carrying kubectl's own message. */
  async run(args: readonly string[], input?: string): Promise<string> {
    const result = await runProgram(this.kubectlPath, ['--kubeconfig', this.kubeconfig, ...args], {
      timeoutMs: this.timeoutMs,
      ...(input === undefined ? {} : { input }),
    });
    return result.stdout;
  }

  /** `kubectl <args> -o json`, parsed. */
  async json<T>(args: readonly string[]): Promise<T> {
    return JSON.parse(await this.run([...args, '-o', 'json'])) as T;
  }

  /** `kubectl apply -f -` of YAML or JSON documents. */
  async apply(manifest: string, extraArgs: readonly string[] = []): Promise<string> {
    return this.run(['apply', ...extraArgs, '-f', '-'], manifest);
  }

  /**
   * `kubectl auth can-i VERB RESOURCE` for this kubeconfig's user (or `--as`): true for "yes",
   * false for "no". kubectl answers on stdout and exits 1 for no, which is an answer, not a
   * failure; warnings (a namespace flag on a cluster-scoped resource) go to stderr.
   */
  async canI(verb: string, resource: string, extraArgs: readonly string[] = []): Promise<boolean> {
    try {
      return (await this.run(['auth', 'can-i', verb, resource, ...extraArgs])).trim() === 'yes';
    } catch (error) {
      if (error instanceof ProgramFailed && error.stdout.trim() === 'no') return false;
      throw error;
    }
  }
}

/** A kubeconfig that authenticates with a bearer token (a service-account or bootstrap token). */
export function tokenKubeconfig(options: { server: string; caPem: string; token: string; user?: string }): string {
  const user = options.user ?? 'token-user';
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'cluster',
          cluster: {
            server: options.server,
            'certificate-authority-data': Buffer.from(options.caPem).toString('base64'),
          },
        },
      ],
      users: [{ name: user, user: { token: options.token } }],
      contexts: [{ name: 'default', context: { cluster: 'cluster', user } }],
      'current-context': 'default',
    },
    null,
    2,
  );
}

/**
 * Writes a kubeconfig (mode 0600: it holds a credential) for service account `namespace/name`
 * with a token from the TokenRequest API (`kubectl create token`), valid for `duration`.
 */
export async function writeServiceAccountKubeconfig(
  admin: Kubectl,
  options: { namespace: string; name: string; server: string; caPem: string; path: string; duration?: string },
): Promise<void> {
  const token = (
    await admin.run(['-n', options.namespace, 'create', 'token', options.name, '--duration', options.duration ?? '2h'])
  ).trim();
  await writeFile(
    options.path,
    tokenKubeconfig({
      server: options.server,
      caPem: options.caPem,
      token,
      user: `${options.namespace}:${options.name}`,
    }),
    { mode: 0o600 },
  );
}
