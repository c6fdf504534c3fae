import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join as joinPath } from 'node:path';
import { pathExists } from '@constellation/files';
import { caPublicKeyPin } from '@constellation/keys';
import { errorMessage } from '@constellation/errors';
import { controlPlaneRun, kubeconfigCredential, startNodeControlPlane } from './control-plane-process.js';
import { stopApiServer } from './control-plane-stop.js';
import { hostPort } from './config-defaults.js';
import { loadInitConfig, loadJoinConfig } from './config-load.js';
import type { Warn } from './config-schema.js';
import { parseHostPort } from './config-validation.js';
import { DiscoveryError, discoverCluster } from './discovery.js';
import { existingReadyNodeError } from './existing-node-check.js';
import { fetchClusterConfiguration } from './kubeadm-config-map.js';
import { kubeconfig } from './kubeconfig.js';
import { fetchKubeletConfiguration, writeKubeletConfigFile } from './kubelet-config-map.js';
import type { KubeletConfiguration } from './kubelet-config-map.js';
import { registerNode } from './kubelet-registration.js';
import { markControlPlane } from './mark-control-plane.js';
import { currentClientCredential, storeClientCredential } from './kubelet-cert-store.js';
import { TlsBootstrapError, tlsBootstrap } from './kubelet-tls-bootstrap.js';
import type { KubeletClientCredential } from './kubelet-tls-bootstrap.js';
import { standinPaths } from './paths.js';
import { issueClientCredential } from './pki.js';
import { initNodeChecks, joinNodeChecks, runChecks } from './preflight.js';
import type { PreflightCheck } from './preflight.js';
import { sharedCertificateError } from './shared-certificates.js';
import { PhaseError } from './phase-error.js';

export { PhaseError } from './phase-error.js';

/** join's notReadyToJoinControlPlaneTemp, around checkIfReadyForAdditionalControlPlane's error. */
const notReadyForControlPlane = (error: string): string => `
One or more conditions for hosting a new control plane instance is not satisfied.

${error}

Please ensure that:
* The cluster has a stable controlPlaneEndpoint address.
* The certificates that must be shared among control plane instances are provided.
`;

type Print = (line: string) => void;

/** The preflight phase: failed checks stop the command unless ignored; warnings go to stderr. */
async function preflight(print: Print, checks: readonly PreflightCheck[], ignore: readonly string[]): Promise<void> {
  print('[preflight] Running pre-flight checks');
  const failure = await runChecks(checks, ignore, (line) => {
    process.stderr.write(`${line}\n`);
  });
  if (failure !== undefined) throw new PhaseError('preflight', failure);
}

/** Loads the configuration, printing kubeadm's warnings to stderr. */
function load<T>(loader: (text: string, warn: Warn) => T, text: string): T {
  return loader(text, (line) => {
    process.stderr.write(`${line}\n`);
  });
}

export interface InitOptions {
  /** --skip-token-print: leave the bootstrap token out of the printed join command. */
  skipTokenPrint?: boolean;
}

/**
 * `kubeadm init --config <file>`: the real control plane (kubeadm's certs, kubeconfig, etcd and
 * control-plane phases, then the four programs as processes in place of the static pods), the
 * kubelet's configuration and its Node registration with kubeadm's kubelet.conf, then kubeadm's
 * upload-config, mark-control-plane and bootstrap-token phases, and the join command.
 */
export async function init(root: string, configPath: string, print: Print, options: InitOptions = {}): Promise<void> {
  const configText = await readFile(configPath, 'utf8');
  const { init: initConfig, cluster, kubelet: kubeletConfig } = load(loadInitConfig, configText);
  const run = controlPlaneRun();
  const paths = standinPaths(root);
  const skipped = (phase: string): boolean =>
    initConfig.skipPhases.some((p) => p === phase || phase.startsWith(`${p}/`));
  // GetControlPlaneEndpoint: without controlPlaneEndpoint, kubeconfigs use the advertise address.
  const endpoint = parseHostPort(cluster.controlPlaneEndpoint);
  const endpointHost = endpoint?.host ?? initConfig.advertiseAddress;
  if (!skipped('preflight'))
    await preflight(
      print,
      initNodeChecks(root, initConfig.bindPort, run.netns === undefined ? undefined : initConfig.advertiseAddress),
      initConfig.nodeRegistration.ignorePreflightErrors,
    );
  // ParseHostPort without a port: the local bind port (GetControlPlaneEndpoint).
  const server = `https://${hostPort(endpointHost, endpoint?.port ?? initConfig.bindPort)}`;
  print('[certs] Using certificateDir folder "/etc/kubernetes/pki"');
  print('[control-plane] Using manifest folder "/etc/kubernetes/manifests"');
  await stopApiServer(root);
  let controlPlane;
  try {
    controlPlane = await startNodeControlPlane(
      root,
      configText,
      { ip: initConfig.advertiseAddress, port: initConfig.bindPort },
      run,
    );
  } catch (err) {
    throw new PhaseError('wait-control-plane', errorMessage(err));
  }
  try {
    if (!skipped('kubelet-start')) {
      print('[kubelet-start] Writing kubelet configuration to file "/var/lib/kubelet/config.yaml"');
      await writeKubeletConfigFile(paths.kubeletConfig, kubeletConfig);
    }
    const nodeName = initConfig.nodeRegistration.name;
    const local = controlPlane.apiServerUrl;
    // The kubelet registers its Node with the credentials kubeadm's kubeconfig phase gave it
    // (system:node:<name>; NodeRestriction lets a node create its own Node).
    await registerNode(
      local,
      controlPlane.caCertificatePem,
      await kubeconfigCredential(paths.kubeletConf),
      nodeName,
      initConfig.nodeRegistration.nodeIp,
    );
    const phase = async (name: string, ...args: string[]): Promise<void> => {
      try {
        for (const line of (await controlPlane.kubeadmInitPhase(...args)).trimEnd().split('\n')) print(line);
      } catch (err) {
        throw new PhaseError(name, errorMessage(err));
      }
    };
    if (!skipped('upload-config/kubeadm')) await phase('upload-config/kubeadm', 'upload-config', 'kubeadm');
    if (!skipped('upload-config/kubelet')) await phase('upload-config/kubelet', 'upload-config', 'kubelet');
    if (!skipped('mark-control-plane')) await phase('mark-control-plane', 'mark-control-plane');
    if (!skipped('bootstrap-token')) await phase('bootstrap-token', 'bootstrap-token');
  } catch (err) {
    await controlPlane.stop();
    throw err;
  }
  print('Your Kubernetes control-plane has initialized successfully!');
  if (!skipped('show-join-command')) {
    // A token kubeadm drew itself (none configured) is not the one the stand-in's defaults drew.
    const [first] = initConfig.bootstrapTokenConfigs.length > 0 ? initConfig.bootstrapTokens : [];
    const token =
      first === undefined || options.skipTokenPrint === true ? '<value withheld>' : `${first.id}.${first.secret}`;
    print('Then you can join any number of worker nodes by running the following on each as root:');
    print(`kubeadm join ${server.slice('https://'.length)} --token ${token} \\`);
    print(`\t--discovery-token-ca-cert-hash ${caPublicKeyPin(controlPlane.caCertificatePem)}`);
  }
}

/**
 * `kubeadm join --config <file>`: token discovery (cluster-info, JWS, CA pin, pinned re-fetch),
 * then the kubelet's TLS bootstrap with the token and its Node registration; control planes
 * also get kubeadm's admin credentials and the control-plane mark.
 */
export async function join(root: string, configPath: string, print: Print): Promise<void> {
  const config = load(loadJoinConfig, await readFile(configPath, 'utf8'));
  const nodeName = config.nodeRegistration.name;
  const paths = standinPaths(root);
  if (!config.skipPhases.includes('preflight'))
    await preflight(
      print,
      joinNodeChecks(root, config.controlPlane !== undefined),
      config.nodeRegistration.ignorePreflightErrors,
    );
  let cluster;
  try {
    cluster = await discoverCluster(config, print);
  } catch (err) {
    if (err instanceof DiscoveryError)
      throw new PhaseError('preflight', `couldn't validate the identity of the API Server: ${err.message}`);
    throw err;
  }
  print('[preflight] Reading configuration from the cluster...');
  let stored: { clusterName: string; controlPlaneEndpoint: string };
  // The joining kubelet's configuration: the cluster's, never a KubeletConfiguration of the join file.
  let kubeletConfig: KubeletConfiguration;
  try {
    stored = await fetchClusterConfiguration(cluster.server, cluster.caPem, config.tlsBootstrapToken);
    kubeletConfig = await fetchKubeletConfiguration(cluster.server, cluster.caPem, config.tlsBootstrapToken);
  } catch (err) {
    throw new PhaseError('preflight', errorMessage(err));
  }
  // checkIfReadyForAdditionalControlPlane (cmd/kubeadm/app/cmd/phases/join/preflight.go): a stable
  // endpoint, and without a certificate key the shared certificates already in place.
  if (config.controlPlane !== undefined && !config.skipPhases.includes('preflight')) {
    const notReady =
      stored.controlPlaneEndpoint === ''
        ? "unable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address"
        : config.controlPlane.certificateKey === ''
          ? await sharedCertificateError(paths.pki)
          : undefined;
    if (notReady !== undefined) throw new PhaseError('preflight', notReadyForControlPlane(notReady));
  }
  await checkNoReadyNode(paths.pki, cluster, config.tlsBootstrapToken, nodeName);
  print('[kubelet-start] Writing kubelet configuration to file "/var/lib/kubelet/config.yaml"');
  await writeKubeletConfigFile(paths.kubeletConfig, kubeletConfig);
  print('[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap');
  const credential =
    (await currentClientCredential(root, cluster.caPem, nodeName)) ??
    (await bootstrapKubelet(root, cluster, nodeName, config));
  await mkdir(paths.kubernetes, { recursive: true });
  await writeFile(
    paths.kubeletConf,
    kubeconfig({
      clusterName: 'kubernetes',
      server: cluster.server,
      caPem: cluster.caPem,
      userName: `system:node:${nodeName}`,
      clientCertPem: credential.certPem,
      clientKeyPem: credential.keyPem,
    }),
    { mode: 0o600 },
  );
  try {
    await registerNode(
      cluster.server,
      cluster.caPem,
      { cert: credential.certPem, key: credential.keyPem },
      nodeName,
      config.nodeRegistration.nodeIp,
      // registerTaintsUsingFlags: a worker's kubelet registers with the taints itself.
      config.controlPlane === undefined ? config.nodeRegistration.taints : [],
    );
  } catch (err) {
    throw new PhaseError('kubelet-start', errorMessage(err));
  }
  if (config.controlPlane !== undefined) {
    // control-plane-prepare/kubeconfig: admin.conf from the shared CA, then mark-control-plane.
    const admin = await issueClientCredential(paths.pki, 'kubernetes-admin', ['kubeadm:cluster-admins']);
    await writeFile(
      paths.adminConf,
      kubeconfig({
        clusterName: stored.clusterName,
        server: cluster.server,
        caPem: cluster.caPem,
        userName: 'kubernetes-admin',
        clientCertPem: admin.certPem,
        clientKeyPem: admin.keyPem,
      }),
      { mode: 0o600 },
    );
    if (!config.skipPhases.some((p) => p === 'control-plane-join' || p === 'control-plane-join/mark-control-plane')) {
      try {
        await markControlPlane(
          cluster.server,
          cluster.caPem,
          { cert: admin.certPem, key: admin.keyPem },
          nodeName,
          config.nodeRegistration.taints,
          config.kubernetesApiCallMs,
          print,
        );
      } catch (err) {
        throw new PhaseError(
          'control-plane-join/mark-control-plane',
          `error applying control-plane label and taints: ${errorMessage(err)}`,
        );
      }
    }
  }
  print('This node has joined the cluster');
}

/**
 * kubelet-start before the kubelet starts (join/kubelet.go runKubeletStartJoinPhase): the cluster
 * CA written to caCertPath unless present, then no Ready Node of this name may exist.
 */
async function checkNoReadyNode(
  pki: string,
  cluster: { server: string; caPem: string },
  token: string,
  nodeName: string,
): Promise<void> {
  const caPath = joinPath(pki, 'ca.crt');
  if (!(await pathExists(caPath))) {
    await mkdir(pki, { recursive: true });
    await writeFile(caPath, cluster.caPem, { mode: 0o644 });
  }
  let clash: string | undefined;
  try {
    clash = await existingReadyNodeError(cluster.server, cluster.caPem, token, nodeName);
  } catch (err) {
    clash = `cannot get Node "${nodeName}": ${errorMessage(err)}`;
  }
  if (clash !== undefined) throw new PhaseError('kubelet-start', clash);
}

/** The kubelet's TLS bootstrap with the token, its result kept in the kubelet's certificate store. */
async function bootstrapKubelet(
  root: string,
  cluster: { server: string; caPem: string },
  nodeName: string,
  config: { tlsBootstrapToken: string; tlsBootstrapTimeoutMs: number },
): Promise<KubeletClientCredential> {
  try {
    const credential = await tlsBootstrap(
      cluster.server,
      cluster.caPem,
      nodeName,
      config.tlsBootstrapToken,
      config.tlsBootstrapTimeoutMs,
    );
    await storeClientCredential(root, credential);
    return credential;
  } catch (err) {
    if (err instanceof TlsBootstrapError)
      throw new PhaseError('kubelet-start', `failed to run the kubelet TLS bootstrap: ${err.message}`);
    throw err;
  }
}

/** cleanup-node's directories (contents only) and files, as they are named on a node. */
const RESET_DIRS = ['/etc/kubernetes/manifests', '/var/lib/kubelet', '/etc/kubernetes/pki'];
const RESET_FILES = [
  'admin.conf',
  'super-admin.conf',
  'kubelet.conf',
  'bootstrap-kubelet.conf',
  'controller-manager.conf',
  'scheduler.conf',
].map((name) => `/etc/kubernetes/${name}`);

/**
 * `kubeadm reset`: stops the control plane's programs (its etcd data goes with the directories)
 * and cleans the node as cleanup-node does (cmd/kubeadm/app/cmd/phases/reset/cleanupnode.go
 * runCleanupNode, resetConfigDir): the directories are emptied, not removed.
 */
export async function reset(root: string, print: Print): Promise<void> {
  await stopApiServer(root);
  print(`[reset] Deleting contents of directories: [${RESET_DIRS.join(' ')}]`);
  for (const dir of RESET_DIRS) {
    const entries = await readdir(joinPath(root, dir)).catch(() => []);
    for (const entry of entries) await rm(joinPath(root, dir, entry), { recursive: true, force: true });
  }
  print(`[reset] Deleting files: [${RESET_FILES.join(' ')}]`);
  for (const file of RESET_FILES) await rm(joinPath(root, file), { recursive: true, force: true });
}
