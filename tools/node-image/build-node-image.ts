// `npm run node-image`: builds the node OS image (Debian bookworm, our .deb, dm-verity root, UKI)
// into a cache directory per recipe and prints that directory. See --help and docs/node-image.md.
import { Command, InvalidArgumentError, Option } from 'commander';
import { existsSync } from 'node:fs';
import { readdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { buildImage } from './build-image.js';
import { imageCacheDir, pruneCache } from './cache.js';
import { checkHostPrograms, HOST_PROGRAMS, imageVersion, resolveDeb, resolveTrust, resolveRuntime } from './inputs.js';
import { readManifest } from './manifest.js';
import { DEFAULT_SIGNING_KEY, writeSignedMeasurements } from './signed-measurements.js';
import { formatSeconds, progress } from './progress.js';
import { DEFAULT_APT_SOURCES, DEFAULT_SOURCE_DATE_EPOCH, hostToolVersions, recipeHash } from './recipe.js';
import type { RecipeInputs } from './recipe.js';

interface Options {
  deb?: string;
  buildDeb: boolean;
  kubernetesBinDir?: string;
  ekRoots?: string;
  ekIntermediates?: string;
  artifactKeyring?: string;
  guestAgent: boolean;
  sourceDateEpoch: number;
  aptSources: string;
  output?: string;
  rebuild: boolean;
  keepWork: boolean;
  signingKey: string;
}

const DESCRIPTION = `Builds the node OS image: Debian bookworm (mmdebstrap, from this machine's apt sources) with systemd, Debian's cloud kernel, the node .deb (bootstrapper and node preparation), the Kubernetes build's containerd and runc; a read-only squashfs root protected by dm-verity; an initrd of ours that opens it; a UKI (systemd-stub) whose measured command line carries the root hash, on a FAT ESP. Outputs: uki.efi, esp.img, root.img, root.verity, cmdline.txt, manifest.json, and the reference measurements computed from the UKI, signed: measurements.json, measurements.json.sig, measurements.pub. Cached per recipe in ~/.cache/constellation/node-image/<recipe>/ (about 3 minutes cold on 2 cores, nothing when cached); the directory is printed on stdout, progress on stderr. Needs root (mmdebstrap, chroot, mknod).`;

const AFTER = `
Boot it: node --conditions=@constellation/source --import tsx tools/node-image/smoke-boot.ts <dir>
Reproducible: node --conditions=@constellation/source --import tsx tools/node-image/check-reproducible.ts

Examples:
  npm run node-image
  npm run node-image -- --build-deb          # the .deb from the current sources first
  npm run node-image -- --output /tmp/image  # outside the cache`;

function parseEpoch(text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value)) {
    throw new InvalidArgumentError(`Expected seconds since 1970 (a whole number), got ${text}`);
  }
  return value;
}

function parseOptions(argv: string[]): Options {
  const envEpoch = process.env['SOURCE_DATE_EPOCH'];
  const command = new Command('npm run node-image --')
    .description(DESCRIPTION)
    .addOption(new Option('--deb <file>', 'the node .deb (default: dist/release/…, built by npm run deb when missing)'))
    .addOption(new Option('--build-deb', 'build the node .deb with npm run deb first').default(false))
    .addOption(
      new Option(
        '--kubernetes-bin-dir <dir>',
        "the Kubernetes build's programs (default: node tools/kubernetes/build.mjs --print-bin-dir; none when not built)",
      ),
    )
    .addOption(
      new Option(
        '--ek-roots <pem>',
        "EK CA roots the bootstrapper checks the JoinService's host against (/etc/constellation/ek-roots.pem)",
      ),
    )
    .addOption(
      new Option(
        '--ek-intermediates <pem>',
        "EK CA intermediates the bootstrapper sends with its TPM's EK certificate (/etc/constellation/ek-intermediates.pem)",
      ),
    )
    .addOption(
      new Option(
        '--artifact-keyring <asc>',
        "armored OpenPGP public key node preparation checks the component manifest's signature with (/etc/constellation/pubring.asc)",
      ),
    )
    .addOption(
      new Option(
        '--guest-agent',
        "add qemu-guest-agent (the host can run programs in the guest: mini's VMs only)",
      ).default(false),
    )
    .addOption(
      new Option('--source-date-epoch <seconds>', 'the one timestamp of every file in the image')
        .argParser(parseEpoch)
        .default(
          envEpoch === undefined ? DEFAULT_SOURCE_DATE_EPOCH : parseEpoch(envEpoch),
          'SOURCE_DATE_EPOCH or 2026-01-01',
        ),
    )
    .addOption(new Option('--apt-sources <file>', 'the apt sources mmdebstrap uses').default(DEFAULT_APT_SOURCES))
    .addOption(new Option('--output <dir>', 'build into this new directory instead of the cache (always builds)'))
    .addOption(new Option('--rebuild', 'build again even when the cache has this recipe').default(false))
    .addOption(
      new Option(
        '--signing-key <pem>',
        "the publisher's ECDSA P-256 key (PKCS#8 PEM) that signs measurements.json; created on first use when it is the default",
      ).default(DEFAULT_SIGNING_KEY),
    )
    .addOption(
      new Option('--keep-work', 'keep the root filesystem tree and the initrd staging (debugging)').default(false),
    )
    .addHelpText('after', AFTER)
    .showHelpAfterError()
    .parse(argv, { from: 'user' });
  return command.opts<Options>();
}

async function resolveInputs(options: Options): Promise<RecipeInputs> {
  if (!existsSync(options.aptSources)) throw new Error(`--apt-sources ${options.aptSources} does not exist`);
  return {
    aptSources: resolve(options.aptSources),
    deb: await resolveDeb(
      options.deb === undefined ? undefined : resolve(options.deb),
      options.buildDeb,
      options.sourceDateEpoch,
    ),
    runtime: await resolveRuntime(options.kubernetesBinDir),
    trust: await resolveTrust({
      ...(options.ekRoots === undefined ? {} : { ekRoots: resolve(options.ekRoots) }),
      ...(options.ekIntermediates === undefined ? {} : { ekIntermediates: resolve(options.ekIntermediates) }),
      ...(options.artifactKeyring === undefined ? {} : { artifactKeyring: resolve(options.artifactKeyring) }),
    }),
    guestAgent: options.guestAgent,
    sourceDateEpoch: options.sourceDateEpoch,
  };
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (process.getuid?.() !== 0)
    throw new Error('building the node image needs root (mmdebstrap --mode=root, chroot, mknod)');
  await checkHostPrograms(HOST_PROGRAMS);
  const started = Date.now();
  const inputs = await resolveInputs(options);
  const tools = await hostToolVersions();
  const recipe = await recipeHash(inputs, tools);

  let outDir: string;
  let workDir: string;
  const cacheDir = imageCacheDir();
  const cached = join(cacheDir, recipe);
  if (options.output === undefined) {
    if (!options.rebuild && existsSync(join(cached, 'manifest.json'))) {
      await readManifest(cached);
      progress(`recipe ${recipe}: built before`);
      await writeSignedMeasurements(cached, options.signingKey);
      process.stdout.write(`${cached}\n`);
      return;
    }
    await pruneCache(cacheDir, recipe);
    workDir = join(cacheDir, `${recipe}.partial-${process.pid}`);
    outDir = join(workDir, 'out');
  } else {
    outDir = resolve(options.output);
    if (existsSync(outDir) && (await readdir(outDir)).length > 0) throw new Error(`--output ${outDir} is not empty`);
    workDir = `${outDir}.work-${process.pid}`;
  }
  progress(
    `recipe ${recipe}: building the node image (about 3 min on 2 cores) from ${inputs.deb.path}` +
      (inputs.runtime === undefined ? '' : ` and Kubernetes ${inputs.runtime.release}'s containerd and runc`),
  );
  try {
    const manifest = await buildImage({
      inputs,
      recipe,
      tools,
      imageVersion: await imageVersion(),
      outDir,
      workDir,
    });
    if (options.output === undefined) {
      await rm(cached, { recursive: true, force: true });
      await rename(outDir, cached);
      outDir = cached;
    }
    await writeSignedMeasurements(outDir, options.signingKey);
    if (options.keepWork) progress(`the root filesystem tree and the initrd's are in ${workDir}`);
    else await rm(workDir, { recursive: true, force: true });
    progress(
      `built in ${formatSeconds((Date.now() - started) / 1000)}: root hash ${manifest.verity.rootHash}, ` +
        `uki.efi sha256 ${manifest.files['uki.efi']?.sha256 ?? '?'}`,
    );
  } catch (error) {
    if (!options.keepWork) await rm(workDir, { recursive: true, force: true });
    throw error;
  }
  process.stdout.write(`${outDir}\n`);
}

try {
  await main();
} catch (error) {
  process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
