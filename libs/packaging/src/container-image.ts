import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { JOINSERVICE, bundleScript, entryPoint } from './programs.js';
import { appVersion, repoRoot, sourceRevision, sourceUrl } from './release-layout.js';
import { copyIntoRoot, sharedLibraries } from './runtime-files.js';
import { runTool } from './run-tool.js';

/** The image name the DaemonSet in deploy/joinservice uses. */
export const JOINSERVICE_IMAGE_NAME = 'constellation/joinservice';

/** The unprivileged user the image runs as (the distroless convention). */
export const IMAGE_USER_ID = 65532;

const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

export interface ImageOptions {
  /** The Node.js binary (and, through ldd, its libraries) the image holds; this one by default. */
  nodeBinary?: string;
  /** Environment for buildah (CONTAINERS_STORAGE_CONF, STORAGE_DRIVER, …). */
  env?: NodeJS.ProcessEnv;
}

export interface BuiltImage {
  /** name:tag in local container storage. */
  reference: string;
  /** sha256:… of the image manifest in the OCI archive, the digest a registry keeps on push. */
  digest: string;
  /** The image as an OCI archive, for `podman load` or `skopeo copy`. */
  archive: string;
  /** A file holding only the digest. */
  digestFile: string;
  /** A kustomization that applies deploy/joinservice with the image pinned to `digest`. */
  kustomization: string;
}

/**
 * Builds the JoinService container image with buildah, without a registry: FROM scratch holding
 * the Node.js runtime and its shared libraries, the bundle, the CA certificates and a non-root
 * user, nothing else (no shell, no package manager). Nothing in it is written at run time, so it
 * runs with a read-only root file system.
 */
export async function buildJoinServiceImage(outDir: string, options: ImageOptions = {}): Promise<BuiltImage> {
  const nodeBinary = options.nodeBinary ?? process.execPath;
  const env = options.env ?? process.env;
  const version = appVersion(JOINSERVICE.app);
  const reference = `${JOINSERVICE_IMAGE_NAME}:${version}`;
  const context = join(outDir, '.work', 'joinservice-image');
  const rootfs = join(context, 'rootfs');
  await rm(context, { recursive: true, force: true });
  await mkdir(rootfs, { recursive: true });

  await runTool(process.execPath, [bundleScript, entryPoint(JOINSERVICE), join(context, 'joinservice.mjs')]);
  await copyIntoRoot(rootfs, join(context, 'joinservice.mjs'), '/app/joinservice.mjs');
  await copyIntoRoot(rootfs, nodeBinary, '/usr/bin/node');
  for (const library of await sharedLibraries(nodeBinary)) await copyIntoRoot(rootfs, library);
  await copyIntoRoot(rootfs, CA_BUNDLE);
  await mkdir(join(rootfs, 'etc'), { recursive: true });
  await writeFile(
    join(rootfs, 'etc', 'passwd'),
    `root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:${IMAGE_USER_ID}:${IMAGE_USER_ID}:nonroot:/home/nonroot:/sbin/nologin\n`,
  );
  await writeFile(join(rootfs, 'etc', 'group'), `root:x:0:\nnonroot:x:${IMAGE_USER_ID}:\n`);
  await chmod(join(rootfs, 'usr', 'bin', 'node'), 0o755);

  await writeFile(
    join(context, 'Containerfile'),
    [
      'FROM scratch',
      'COPY rootfs/ /',
      `USER ${IMAGE_USER_ID}:${IMAGE_USER_ID}`,
      // Node's own CA list is compiled in; this makes the image's bundle the one TLS trusts.
      `ENV SSL_CERT_FILE=${CA_BUNDLE}`,
      'ENTRYPOINT ["/usr/bin/node", "--use-openssl-ca", "/app/joinservice.mjs"]',
      '',
    ].join('\n'),
  );
  const revision = await sourceRevision();
  const committed = (await runTool('git', ['log', '-1', '--format=%ct'], { cwd: repoRoot })).trim();
  const labels = {
    'org.opencontainers.image.title': 'constellation-joinservice',
    'org.opencontainers.image.description': 'Admits attested nodes to a Constellation cluster with join tickets.',
    'org.opencontainers.image.version': version,
    'org.opencontainers.image.revision': revision,
    'org.opencontainers.image.source': sourceUrl,
  };
  await runTool(
    'buildah',
    [
      'bud',
      '--quiet',
      '--layers=false',
      // The commit's time instead of now: the same sources give the same image digest.
      `--timestamp=${committed}`,
      ...Object.entries(labels).flatMap(([key, value]) => ['--label', `${key}=${value}`]),
      '--file',
      join(context, 'Containerfile'),
      '--tag',
      reference,
      context,
    ],
    { env },
  );

  await mkdir(outDir, { recursive: true });
  const archive = join(outDir, `joinservice-image-${version}.oci.tar`);
  const digestFile = join(outDir, `joinservice-image-${version}.digest`);
  await rm(archive, { force: true });
  await runTool(
    'buildah',
    ['push', '--quiet', '--digestfile', digestFile, reference, `oci-archive:${archive}:${reference}`],
    {
      env,
    },
  );
  const digest = (await readFile(digestFile, 'utf8')).trim();
  if (!/^sha256:[0-9a-f]{64}$/.test(digest))
    throw new Error(`${digestFile}: expected sha256:<64 hex>, got "${digest}"`);
  await writeFile(digestFile, `${digest}\n`);
  const kustomization = await writePinnedKustomization(outDir, version, digest);
  return { reference, digest, archive, digestFile, kustomization };
}

/**
 * An overlay of deploy/joinservice that pins the image to the digest just built:
 * `kubectl apply -k dist/release/joinservice-kustomize`.
 */
async function writePinnedKustomization(outDir: string, version: string, digest: string): Promise<string> {
  const dir = join(outDir, 'joinservice-kustomize');
  await mkdir(dir, { recursive: true });
  const file = join(dir, 'kustomization.yaml');
  await writeFile(
    file,
    [
      '# Written by `npm run image`: deploy/joinservice with the JoinService image pinned to the digest',
      '# of the image this build made (the manifest digest in the OCI archive beside this directory).',
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      'resources:',
      `  - ${relative(dir, join(repoRoot, 'deploy', 'joinservice'))}`,
      'images:',
      `  - name: ${JOINSERVICE_IMAGE_NAME}`,
      `    newTag: ${version}`,
      `    digest: ${digest}`,
      '',
    ].join('\n'),
  );
  return file;
}
