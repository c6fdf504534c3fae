// The Kubernetes release the build scripts build: the one tools/kubernetes/k8s/go.mod pins, or
// another supported one (KUBERNETES_RELEASE), and the version stamp its programs carry.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fail } from './cached-build.js';

/** The Go module the Kubernetes programs are built in. */
export const KUBERNETES_MODULE_DIR = join(import.meta.dirname, 'k8s');

/** The minors this project supports; the pinned release is the newest patch of the newest. */
export const SUPPORTED_MINORS = ['1.35', '1.36', '1.37'];

/** The release the committed Go module pins (k8s/go.mod's require line). */
export function pinnedRelease(): string {
  const goMod = readFileSync(join(KUBERNETES_MODULE_DIR, 'go.mod'), 'utf8');
  const release = /^require k8s\.io\/kubernetes (v\d+\.\d+\.\d+)/m.exec(goMod)?.[1];
  return release ?? fail('tools/kubernetes/k8s/go.mod does not require k8s.io/kubernetes');
}

/** KUBERNETES_RELEASE when set (checked), else the pinned release. */
export function requestedRelease(env: NodeJS.ProcessEnv = process.env): string {
  const release = env['KUBERNETES_RELEASE'] ?? pinnedRelease();
  const minor = /^v(\d+\.\d+)\.\d+$/.exec(release)?.[1];
  if (minor === undefined) fail(`KUBERNETES_RELEASE must look like v1.37.2, got "${release}"`);
  if (!SUPPORTED_MINORS.includes(minor))
    fail(`KUBERNETES_RELEASE ${release} is not supported; supported minors: ${SUPPORTED_MINORS.join(', ')}`);
  return release;
}

/** `-ldflags` for a Kubernetes program of `release` (v1.37.2): stripped, versioned, reproducible. */
export function kubernetesLdflags(release: string): string {
  const [major = '', minor = ''] = release.slice(1).split('.');
  const flags = ['-s', '-w'];
  for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    flags.push(
      `-X ${pkg}.gitVersion=${release}`,
      `-X ${pkg}.gitMajor=${major}`,
      `-X ${pkg}.gitMinor=${minor}`,
      `-X ${pkg}.gitTreeState=clean`,
      `-X ${pkg}.gitCommit=${'0'.repeat(40)}`,
      `-X ${pkg}.buildDate=1970-01-01T00:00:00Z`,
    );
  }
  return flags.join(' ');
}

/**
 * The Kubernetes module's go.mod re-pinned to `release`: k8s.io/kubernetes at it, the staging
 * modules at its v0 twin, the indirect requirements dropped for `go mod tidy` or `-mod=mod` to
 * find again (checked against the checksum database).
 */
export function repinnedGoMod(release: string): string {
  const staging = release.replace(/^v1\./, 'v0.');
  return readFileSync(join(KUBERNETES_MODULE_DIR, 'go.mod'), 'utf8')
    .replace(/^(require k8s\.io\/kubernetes) v\S+/m, `$1 ${release}`)
    .replace(/^(\tk8s\.io\/\S+ => k8s\.io\/\S+) v\S+$/gm, `$1 ${staging}`)
    .replace(/^require \([\s\S]*?^\)\n/m, '');
}
