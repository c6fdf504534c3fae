// The version stamp build.mjs gives the Kubernetes programs (its own copy stays there: build.mjs is
// part of the programs' recipe hash), for what images.mjs and conformance-build.mjs build from the
// same release, so that kube-proxy and e2e.test report it. Part of both scripts' recipe hashes.
import { fileURLToPath } from 'node:url';

/** This file, for the recipe hashes of the scripts that use it. */
export const VERSION_STAMP_FILE = fileURLToPath(import.meta.url);

/** `-ldflags` for a Kubernetes program of `release` (v1.37.2): stripped, versioned, reproducible. */
export function kubernetesLdflags(release) {
  const [major, minor] = release.slice(1).split('.');
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
