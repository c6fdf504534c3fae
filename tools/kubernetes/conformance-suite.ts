// What a built conformance suite's directory holds, for the script that builds it
// (conformance-build.ts) and the runner that runs it (tools/conformance/run.ts): bin/ with
// e2e.test and ginkgo, images/ with the test images' OCI archives and images.json.
import { join } from 'node:path';
import type { ImageArchive, ImagesManifest } from '@constellation/kubernetes-programs';

/** The command that builds the suite when missing and prints its directory on stdout. */
export const CONFORMANCE_BUILD_COMMAND = 'node tools/kubernetes/conformance-build.mjs';

/** That command's script, for running it from anywhere. */
export const CONFORMANCE_BUILD_SCRIPT = join(import.meta.dirname, 'conformance-build.mjs');

export interface ConformanceSuiteLayout {
  /** e2e.test, ginkgo, agnhost, nnp, sample-apiserver, busybox and release.json. */
  binDir: string;
  e2eTest: string;
  ginkgo: string;
  /** The test images' archives and images.json. */
  imagesDir: string;
}

/** Where the suite's parts are in its build directory `dir`. */
export function conformanceSuiteLayout(dir: string): ConformanceSuiteLayout {
  const binDir = join(dir, 'bin');
  return {
    binDir,
    e2eTest: join(binDir, 'e2e.test'),
    ginkgo: join(binDir, 'ginkgo'),
    imagesDir: join(dir, 'images'),
  };
}

/** A test image built here, and what it holds. */
export interface BuiltTestImage extends ImageArchive {
  what: string;
}

/** An image the suite names that is not built here, and why. */
export interface NotBuiltTestImage {
  reference: string;
  reason: string;
}

/** Alpine's minirootfs as it was fetched: the module version, the file in it and its digest. */
export interface AlpineRootfsSource {
  module: string;
  file: string;
  sha256: string;
}

/** The suite's images.json: a node images manifest plus what was built from what, and what was not. */
export interface ConformanceImagesManifest extends ImagesManifest {
  builtAt: string;
  /** The programs in bin/. */
  programs: string[];
  busybox: { version: string; source: string; sha256: string };
  images: BuiltTestImage[];
  notBuilt: NotBuiltTestImage[];
  /** Names the suite lists beyond these (the CSI drivers' images, for storage specs). */
  notBuiltOther: string[];
  /** Per image built on Debian's packages: package → version. */
  debianPackages: Record<string, Record<string, string>>;
  alpine: { rootfs?: AlpineRootfsSource };
}
