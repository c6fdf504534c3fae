import { chmod, copyFile, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { BOOTSTRAPPER, NODE_PREP } from './programs.js';
import { appVersion, repoRoot, sourceUrl } from './release-layout.js';
import { runTool } from './run-tool.js';

export const NODE_PACKAGE_NAME = 'constellation-node';

/** The units the package enables, in the order they run on a node. */
export const NODE_UNITS = ['constellation-node-prep.service', 'constellation-bootstrapper.service'] as const;

/** Where a Debian package puts systemd units (bookworm: /lib, the merged-/usr moratorium). */
const UNIT_DIR = '/lib/systemd/system';

export interface NodePackageInputs {
  /** The bootstrapper's single executable. */
  bootstrapper: string;
  /** constellation-node-prep's single executable. */
  nodePrep: string;
}

/**
 * Builds the .deb a node image installs: the bootstrapper and node-prep executables in
 * /usr/bin, their units and the kubelet drop-in under /lib/systemd/system, and maintainer
 * scripts that enable the units on first install (they start on the node's next boot, never
 * inside an image build). Returns the .deb's path.
 */
export async function buildNodePackage(inputs: NodePackageInputs, outDir: string): Promise<string> {
  // Debian revision 1 of the upstream version: the package is not "native" to Debian.
  const version = `${appVersion(BOOTSTRAPPER.app)}-1`;
  const architecture = (await runTool('dpkg', ['--print-architecture'])).trim();
  const stage = join(outDir, '.work', 'deb', NODE_PACKAGE_NAME);
  await rm(stage, { recursive: true, force: true });

  await install(inputs.bootstrapper, stage, `/usr/bin/${BOOTSTRAPPER.command}`, 0o755);
  await install(inputs.nodePrep, stage, `/usr/bin/${NODE_PREP.command}`, 0o755);
  const deploy = join(repoRoot, 'deploy');
  await install(
    join(deploy, 'bootstrapper', 'constellation-bootstrapper.service'),
    stage,
    `${UNIT_DIR}/constellation-bootstrapper.service`,
  );
  await install(
    join(deploy, 'node-prep', 'constellation-node-prep.service'),
    stage,
    `${UNIT_DIR}/constellation-node-prep.service`,
  );
  for (const dropIn of await readdir(join(deploy, 'node-prep', 'kubelet.service.d'))) {
    await install(
      join(deploy, 'node-prep', 'kubelet.service.d', dropIn),
      stage,
      `${UNIT_DIR}/kubelet.service.d/${dropIn}`,
    );
  }
  await writeDocs(stage, version);
  await writeFileIn(
    stage,
    `/usr/share/lintian/overrides/${NODE_PACKAGE_NAME}`,
    [
      '# Node.js single executables: the Node.js runtime links its own copy of zlib statically.',
      `${NODE_PACKAGE_NAME}: embedded-library zlib [usr/bin/*]`,
      '',
    ].join('\n'),
  );
  await writeControl(stage, version, architecture);

  await mkdir(outDir, { recursive: true });
  const deb = join(outDir, `${NODE_PACKAGE_NAME}_${version}_${architecture}.deb`);
  // gzip: xz takes a minute for two ~100 MB executables and saves little on machine code.
  await runTool('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z6', '--build', stage, deb]);
  return deb;
}

async function install(source: string, stage: string, path: string, mode = 0o644): Promise<void> {
  const target = join(stage, path);
  await mkdir(join(target, '..'), { recursive: true, mode: 0o755 });
  await copyFile(source, target);
  await chmod(target, mode);
}

async function writeFileIn(stage: string, path: string, content: string | Buffer, mode = 0o644): Promise<void> {
  const target = join(stage, path);
  await mkdir(join(target, '..'), { recursive: true, mode: 0o755 });
  await writeFile(target, content);
  await chmod(target, mode);
}

async function writeDocs(stage: string, version: string): Promise<void> {
  const doc = `/usr/share/doc/${NODE_PACKAGE_NAME}`;
  await writeFileIn(
    stage,
    `${doc}/copyright`,
    [
      'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/',
      'Upstream-Name: constellation-ts',
      `Source: ${sourceUrl}`,
      'Comment: The executables embed the Node.js runtime (MIT, with bundled third-party code under',
      ' their own licenses, listed in https://github.com/nodejs/node/blob/main/LICENSE) and the npm',
      ' packages the programs depend on.',
      '',
      'Files: *',
      'Copyright: 2025-2026 the constellation-ts authors',
      'License: unspecified',
      ' The constellation-ts repository does not declare a license yet.',
      '',
    ].join('\n'),
  );
  // A fixed date: the same sources give the same package.
  const changelog = [
    `${NODE_PACKAGE_NAME} (${version}) unstable; urgency=medium`,
    '',
    '  * Release of the node bootstrapper and node preparation executables.',
    '',
    ` -- constellation-ts maintainers <maintainers@example.invalid>  Thu, 01 Jan 2026 00:00:00 +0000`,
    '',
  ].join('\n');
  await writeFileIn(stage, `${doc}/changelog.Debian.gz`, gzipSync(changelog, { level: 9 }).fill(0, 4, 8));
}

async function writeControl(stage: string, version: string, architecture: string): Promise<void> {
  const units = NODE_UNITS.join(' ');
  await writeFileIn(
    stage,
    '/DEBIAN/control',
    [
      `Package: ${NODE_PACKAGE_NAME}`,
      `Version: ${version}`,
      `Architecture: ${architecture}`,
      'Maintainer: constellation-ts maintainers <maintainers@example.invalid>',
      // What the embedded Node.js runtime links against (ldd of the executables).
      'Depends: libc6 (>= 2.28), libgcc-s1 (>= 3.0), libstdc++6 (>= 9), init-system-helpers (>= 1.54~)',
      'Section: admin',
      'Priority: optional',
      `Homepage: ${sourceUrl}`,
      'Description: Constellation node bootstrapper and node preparation',
      ' The node side of an attested Kubernetes cluster: constellation-node-prep',
      ' prepares the node before kubeadm (Kubernetes version, signed components,',
      ' kubelet.env), and constellation-bootstrapper proves the machine with its',
      ' TPM, then initialises or joins the cluster. Both are single executables',
      ' (no Node.js needed). The units are enabled on installation and start on',
      ' the next boot.',
      '',
    ].join('\n'),
  );
  await writeFileIn(
    stage,
    '/DEBIAN/postinst',
    [
      '#!/bin/sh',
      '# Enables the units on first installation (they start on the next boot: installing into a',
      "# node image must not start them); on upgrades keeps the administrator's choice.",
      'set -e',
      'case "$1" in',
      '  configure | abort-upgrade | abort-deconfigure | abort-remove)',
      `    for unit in ${units}; do`,
      '      deb-systemd-helper unmask "$unit" >/dev/null || true',
      '      if [ -z "$2" ] || deb-systemd-helper --quiet was-enabled "$unit"; then',
      '        deb-systemd-helper enable "$unit" >/dev/null',
      '      else',
      '        deb-systemd-helper update-state "$unit" >/dev/null',
      '      fi',
      '    done',
      '    if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then',
      '      systemctl --system daemon-reload >/dev/null || true',
      '    fi',
      '    ;;',
      'esac',
      '',
    ].join('\n'),
    0o755,
  );
  await writeFileIn(
    stage,
    '/DEBIAN/postrm',
    [
      '#!/bin/sh',
      '# Removal disables the units; purge forgets their state.',
      'set -e',
      `for unit in ${units}; do`,
      '  case "$1" in',
      '    remove) deb-systemd-helper mask "$unit" >/dev/null || true ;;',
      '    purge)',
      '      deb-systemd-helper purge "$unit" >/dev/null || true',
      '      deb-systemd-helper unmask "$unit" >/dev/null || true',
      '      ;;',
      '  esac',
      'done',
      'if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then',
      '  systemctl --system daemon-reload >/dev/null || true',
      'fi',
      '',
    ].join('\n'),
    0o755,
  );
}
