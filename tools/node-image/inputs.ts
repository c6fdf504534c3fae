// Finding what an image is built from: the node .deb (built with `npm run deb` when missing), the
// Kubernetes build's container runtime (when built), and the host programs the build runs.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  imagesDirBeside,
  readImagesManifest,
  sandboxImage as sandboxImageOf,
} from '@constellation/kubernetes-programs';
import { sha256File } from '@constellation/files';
import { progress, run, step } from './progress.js';
import { REPOSITORY_ROOT, RUNTIME_PROGRAMS, TRUST_FILES } from './recipe.js';
import type { RecipeInputs, TrustFile } from './recipe.js';

/** Host programs the build runs, and the Debian package of each (tools/dev/ensure-deps.sh installs them). */
export const HOST_PROGRAMS: Record<string, string> = {
  mmdebstrap: 'mmdebstrap',
  mksquashfs: 'squashfs-tools',
  veritysetup: 'cryptsetup-bin',
  objcopy: 'binutils',
  cpio: 'cpio',
  zstd: 'zstd',
  'mkfs.vfat': 'dosfstools',
  mcopy: 'mtools',
  'dpkg-deb': 'dpkg',
  systemctl: 'systemd',
  chroot: 'coreutils',
  mknod: 'coreutils',
};

/** Fails with the apt-get line that installs what is missing. */
export async function checkHostPrograms(programs: Record<string, string>): Promise<void> {
  const missing: string[] = [];
  for (const [program, pkg] of Object.entries(programs)) {
    try {
      await run('sh', ['-c', `command -v "$1" || test -x "/usr/sbin/$1" || test -x "/sbin/$1"`, 'sh', program]);
    } catch {
      if (!missing.includes(pkg)) missing.push(pkg);
    }
  }
  if (missing.length > 0) {
    throw new Error(
      `missing Debian packages: ${missing.join(' ')} (apt-get install ${missing.join(' ')}, or bash tools/dev/ensure-deps.sh)`,
    );
  }
}

/** The .deb `npm run deb` writes for this version and architecture. */
async function defaultDebPath(): Promise<string> {
  const arch = (await run('dpkg', ['--print-architecture'])).trim();
  return join(REPOSITORY_ROOT, 'dist', 'release', `constellation-node_${await imageVersion()}-1_${arch}.deb`);
}

/**
 * The node .deb: the one given, or dist/release's, built first with `npm run deb` when it is
 * missing or `rebuild` is set (with SOURCE_DATE_EPOCH, so the same sources give the same .deb).
 */
export async function resolveDeb(
  given: string | undefined,
  rebuild: boolean,
  epoch: number,
): Promise<{ path: string; sha256: string }> {
  let path = given;
  if (path === undefined) {
    path = await defaultDebPath();
    if (rebuild || !existsSync(path)) {
      const built = await step('node .deb: npm run deb', 70, () =>
        run('npm', ['run', '--silent', 'deb'], {
          cwd: REPOSITORY_ROOT,
          env: { ...process.env, SOURCE_DATE_EPOCH: String(epoch) },
        }),
      );
      const printed = built.trim().split('\n').pop()?.trim();
      if (printed !== undefined && printed.endsWith('.deb')) path = printed;
    } else {
      progress(`node .deb: ${path} (as built before; --build-deb builds it again from the sources)`);
    }
  }
  if (!existsSync(path)) throw new Error(`the node .deb ${path} does not exist`);
  return { path, sha256: await sha256File(path) };
}

/**
 * The container runtime from the Kubernetes build: the given bin directory, or the build's own
 * (`node tools/kubernetes/build.mjs --print-bin-dir`); undefined when the programs are not built.
 */
export async function resolveRuntime(given: string | undefined): Promise<RecipeInputs['runtime']> {
  let binDir = given;
  if (binDir === undefined) {
    try {
      binDir = (
        await run(process.execPath, [join(REPOSITORY_ROOT, 'tools', 'kubernetes', 'build.mjs'), '--print-bin-dir'])
      ).trim();
    } catch {
      progress(
        'the Kubernetes programs are not built (node tools/kubernetes/build.mjs): the image gets no containerd and runc',
      );
      return undefined;
    }
  }
  const release = (JSON.parse(await readFile(join(binDir, 'release.json'), 'utf8')) as { release?: unknown }).release;
  if (typeof release !== 'string') throw new Error(`${binDir}/release.json names no release`);
  const sha256: Record<string, string> = {};
  for (const program of RUNTIME_PROGRAMS) sha256[program] = await sha256File(join(binDir, program));
  return { binDir, release, sha256, sandboxImage: await sandboxImage(binDir) };
}

/** The pause image the Kubernetes build made beside its programs (node tools/kubernetes/images.mjs). */
async function sandboxImage(binDir: string): Promise<string> {
  const dir = imagesDirBeside(binDir);
  const manifest = await readImagesManifest(dir, 'node tools/kubernetes/images.mjs', '(npm run mini does)');
  return sandboxImageOf(manifest, dir).reference;
}

/** The trust files given on the command line, each checked to hold what its option names. */
export async function resolveTrust(given: Partial<Record<TrustFile, string>>): Promise<RecipeInputs['trust']> {
  const trust: RecipeInputs['trust'] = {};
  for (const file of Object.keys(TRUST_FILES) as TrustFile[]) {
    const path = given[file];
    if (path === undefined) continue;
    const { option, pem } = TRUST_FILES[file];
    const text = await readFile(path, 'utf8').catch((error: unknown) => {
      throw new Error(`${option} ${path}: ${error instanceof Error ? error.message : String(error)}`);
    });
    if (!text.includes(`-----BEGIN ${pem}-----`)) throw new Error(`${option} ${path} holds no ${pem} (PEM/armored)`);
    trust[file] = { path, sha256: await sha256File(path) };
  }
  return trust;
}

/** The version the image carries in os-release (the bootstrapper's). */
export async function imageVersion(): Promise<string> {
  const manifest = JSON.parse(
    await readFile(join(REPOSITORY_ROOT, 'apps', 'bootstrapper', 'package.json'), 'utf8'),
  ) as {
    version?: unknown;
  };
  if (typeof manifest.version !== 'string') throw new Error('apps/bootstrapper/package.json has no version');
  return manifest.version;
}
