// The test run's shared control plane as a command, so that the global setup needs none of our
// packages in its own module graph (vitest's root resolves no source conditions) and a person can
// start and stop the same thing by hand:
//
//   node --conditions=@constellation/source --import tsx tools/test/test-control-plane.ts up DIR
//   node --conditions=@constellation/source --import tsx tools/test/test-control-plane.ts down DIR
//
// `up` builds the programs if needed, starts the control plane in a network namespace of its own,
// writes DIR/shared.json (what tests inject) and exits, leaving the programs running; `down` stops
// them, deletes the namespace and DIR.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createNetworkNamespace,
  deleteNetworkNamespace,
  startControlPlane,
  stopControlPlaneIn,
} from '@constellation/control-plane';
import { locateKubernetesPrograms } from '@constellation/kubernetes-programs';
import type { NetworkNamespace } from '@constellation/control-plane';
import type { SharedKubernetes } from '@constellation/testing';

async function up(dir: string, binDir: string): Promise<void> {
  const programs = await locateKubernetesPrograms(binDir);
  let namespace: NetworkNamespace | undefined;
  try {
    namespace = await createNetworkNamespace();
    const started = Date.now();
    const controlPlane = await startControlPlane({
      programs,
      dir,
      network: { namespace: namespace.name, ip: namespace.ip },
    });
    const shared: SharedKubernetes = {
      binDir: programs.binDir,
      release: programs.release,
      apiServerUrl: controlPlane.apiServerUrl,
      caCertificatePem: controlPlane.caCertificatePem,
      root: controlPlane.root,
      superAdminKubeconfig: controlPlane.superAdminKubeconfig,
      adminKubeconfig: controlPlane.adminKubeconfig,
      namespace: namespace.name,
      ip: namespace.ip,
    };
    await writeFile(join(dir, 'shared.json'), `${JSON.stringify(shared, null, 2)}\n`);
    process.stderr.write(
      `[kubernetes] control plane ${programs.release} ready at ${controlPlane.apiServerUrl} in ${Date.now() - started} ms\n`,
    );
  } catch (error) {
    if (namespace !== undefined) await deleteNetworkNamespace(namespace);
    throw error;
  }
}

async function down(dir: string): Promise<void> {
  await stopControlPlaneIn(dir);
  const shared = await readFile(join(dir, 'shared.json'), 'utf8').then(
    (text) => JSON.parse(text) as SharedKubernetes,
    () => undefined,
  );
  if (shared !== undefined) await deleteNetworkNamespace({ name: shared.namespace });
  await rm(dir, { recursive: true, force: true });
}

const [command, dir, binDir] = process.argv.slice(2);
if (command === 'up' && dir !== undefined && binDir !== undefined) await up(dir, binDir);
else if (command === 'down' && dir !== undefined) await down(dir);
else {
  process.stderr.write('usage: test-control-plane.ts up DIR BIN_DIR | down DIR\n');
  process.exit(2);
}
