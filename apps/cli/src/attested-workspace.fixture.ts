import { readFile } from 'node:fs/promises';
import type { Measurements } from '@constellation/attestation';
import type { EventPolicy } from '@constellation/eventlog';
import type { EkCa } from '@constellation/swtpm';
import { tempDirForTest } from '@constellation/testing';
import { configYaml } from './constellation-conf.js';
import { workspaceFiles, writeWorkspaceFile } from './workspace.js';

/**
 * A workspace whose cluster is the node at 127.0.0.1:`port`, checked against `measurements`:
 * `tpm2-ek` with the EK CA's root and intermediate when `ekCa` is given, else `qemu-vtpm`. For
 * tests that point the CLI at a node of their own making.
 */
export async function attestedWorkspace(options: {
  port: number;
  measurements: Measurements;
  eventPolicy?: EventPolicy;
  ekCa?: EkCa;
  /** tpm2-ek: the EK hash (hex) init may send its secrets to. */
  firstControlPlaneEk?: string;
  initSecret?: string;
}): Promise<string> {
  const { port, measurements, ekCa } = options;
  const events = options.eventPolicy === undefined ? {} : { eventPolicy: options.eventPolicy };
  const workspace = await tempDirForTest();
  await writeWorkspaceFile(
    workspaceFiles(workspace).config,
    configYaml({
      name: 'c',
      kubernetesVersion: 'v1.37.2',
      initEndpoint: `127.0.0.1:${String(port)}`,
      apiServerCertSans: [],
      serviceCidr: '10.96.0.0/12',
      attestation:
        ekCa === undefined
          ? { variant: 'qemu-vtpm', measurements, ...events }
          : {
              variant: 'tpm2-ek',
              measurements,
              ...events,
              ekRoots: await readFile(ekCa.rootCertPath, 'utf8'),
              ekIntermediates: await readFile(ekCa.intermediateCertPath, 'utf8'),
              ...(options.firstControlPlaneEk === undefined
                ? {}
                : { firstControlPlaneEk: options.firstControlPlaneEk }),
            },
    }),
    false,
  );
  if (options.initSecret !== undefined)
    await writeWorkspaceFile(workspaceFiles(workspace).initSecret, options.initSecret, true);
  return workspace;
}
