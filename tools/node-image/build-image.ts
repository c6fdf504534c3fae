// One build of the node image, from its inputs into an output directory; the steps in order.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildEsp } from './esp.js';
import { buildInitrd } from './initrd.js';
import { describeFiles, installedPackages, MANIFEST_KIND, writeManifest } from './manifest.js';
import type { ImageManifest } from './manifest.js';
import { step } from './progress.js';
import { RUNTIME_PROGRAMS, SUITE, TRUST_FILES, VERITY } from './recipe.js';
import type { RecipeInputs, TrustFile } from './recipe.js';
import { buildSquashfs, formatVerity } from './root-image.js';
import { RUNTIME_BIN_DIR } from './rootfs-files.js';
import { bootstrap, customize } from './rootfs.js';
import { buildUki, UKI_STUB } from './uki.js';

/** One value of an os-release file, unquoted. */
async function osReleaseValue(path: string, key: string): Promise<string> {
  const line = (await readFile(path, 'utf8')).split('\n').find((l) => l.startsWith(`${key}=`));
  const value = line?.slice(key.length + 1).replace(/^"(.*)"$/, '$1');
  if (value === undefined || value === '') throw new Error(`${path} has no ${key}`);
  return value;
}

/** The files of an image directory besides manifest.json. */
export const OUTPUT_FILES = ['uki.efi', 'esp.img', 'root.img', 'root.verity', 'cmdline.txt'] as const;

/**
 * The kernel command line (the UKI's .cmdline, measured): the serial console, and the dm-verity
 * root hash the initrd opens the root with. The parameter has a name of our own: with systemd's
 * `roothash=`, systemd-veritysetup-generator would try to open the root again after the switch.
 */
export function kernelCommandLine(rootHash: string): string {
  return `console=ttyS0 ro constellation.roothash=${rootHash}`;
}

export interface BuildOptions {
  inputs: RecipeInputs;
  recipe: string;
  tools: Record<string, string>;
  imageVersion: string;
  /** Where the outputs go (created). */
  outDir: string;
  /** Scratch space: the root filesystem tree and the initrd's (the caller removes it). */
  workDir: string;
}

export async function buildImage(options: BuildOptions): Promise<ImageManifest> {
  const { inputs, outDir, workDir } = options;
  const epoch = inputs.sourceDateEpoch;
  await mkdir(outDir, { recursive: true });
  await mkdir(workDir, { recursive: true });
  const root = join(workDir, 'rootfs');

  await step('root filesystem: mmdebstrap from Debian bookworm', 45, () => bootstrap(root, inputs));
  const kernelVersion = await step('root filesystem: node files and settings', 5, () =>
    customize(root, inputs, options.imageVersion),
  );
  const packages = await installedPackages(root);
  const kernelPackage = `linux-image-${kernelVersion}`;

  await step('root image: squashfs (zstd)', 60, () => buildSquashfs(root, join(outDir, 'root.img'), epoch));
  const verity = await step('root image: dm-verity hash tree', 5, () =>
    formatVerity(join(outDir, 'root.img'), join(outDir, 'root.verity')),
  );
  const cmdline = kernelCommandLine(verity.rootHash);
  // Exactly the .cmdline section's bytes (no newline): what PCR 11 and PCR 9 measure.
  await writeFile(join(outDir, 'cmdline.txt'), cmdline);

  const initrd = join(workDir, 'initrd.cpio.zst');
  await step('initrd: busybox, veritysetup, modules, /init', 5, () =>
    buildInitrd(root, kernelVersion, workDir, initrd, epoch),
  );
  await step('UKI and ESP', 5, async () => {
    await buildUki(
      {
        stub: join(root, UKI_STUB),
        osRelease: join(root, 'usr', 'lib', 'os-release'),
        cmdline: join(outDir, 'cmdline.txt'),
        kernel: join(root, 'boot', `vmlinuz-${kernelVersion}`),
        initrd,
      },
      join(outDir, 'uki.efi'),
      epoch,
    );
    await buildEsp(join(outDir, 'uki.efi'), join(outDir, 'esp.img'), epoch);
  });

  const manifest: ImageManifest = {
    kind: MANIFEST_KIND,
    recipe: options.recipe,
    sourceDateEpoch: epoch,
    suite: SUITE,
    kernel: { version: kernelVersion, package: `${kernelPackage} ${packages[kernelPackage] ?? 'unknown'}` },
    cmdline,
    verity: {
      rootHash: verity.rootHash,
      salt: VERITY.salt,
      uuid: VERITY.uuid,
      hashAlgorithm: VERITY.hashAlgorithm,
      dataBlockSize: VERITY.dataBlockSize,
      hashBlockSize: VERITY.hashBlockSize,
      dataBlocks: verity.dataBlocks,
    },
    files: await describeFiles(outDir, OUTPUT_FILES),
    packages,
    programs: Object.fromEntries(
      inputs.runtime === undefined
        ? []
        : RUNTIME_PROGRAMS.map((p) => [`${RUNTIME_BIN_DIR}/${p}`, inputs.runtime?.sha256[p] ?? '']),
    ),
    kubernetes: {
      release: inputs.runtime?.release ?? null,
      kubeadmAndKubelet:
        'installed at first boot by node preparation from the signed component manifest (/run/state/bin)',
    },
    tools: options.tools,
    osRelease: { versionId: await osReleaseValue(join(root, 'usr', 'lib', 'os-release'), 'VERSION_ID') },
    trust: Object.fromEntries(
      (Object.keys(TRUST_FILES) as TrustFile[]).map((file) => [file, inputs.trust[file]?.sha256 ?? null]),
    ),
  };
  await writeManifest(outDir, manifest);
  return manifest;
}
