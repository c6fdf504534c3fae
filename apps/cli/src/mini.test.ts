import { cp as copy, mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { kubernetesBinDir, repoRoot, runCommand, tempDirForTest, waitFor } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { pathExists } from '@constellation/files';
import { readNodeEnvironment, unitLog } from '@constellation/node-environment';
import { isRunning } from '@constellation/process';
import type { MiniNode, MiniState } from './mini/mini-state.js';
import { BOOTSTRAPPER_UNIT } from './mini/providers/namespace-node.js';

const root = repoRoot();
const cli = join(root, 'apps/cli/dist/constellation.mjs');
// Five real nodes on 2 cores: about 80 s when the machine is otherwise idle, and more under load.
// The mini tests are in this one file so that they run one after another: two clusters of real
// nodes at once on 2 cores took more than four minutes to come up.
const constellation = (workspace: string, ...args: string[]) =>
  runCommand(process.execPath, [cli, '--workspace', workspace, ...args], { timeoutMs: 360_000 });
/** `mini up` with the run's built Kubernetes programs. */
const binDirFlag = (): string[] => ['--kubernetes-bin-dir', kubernetesBinDir()];
const JOINSERVICE_VERSION = (
  JSON.parse(readFileSync(join(root, 'apps/joinservice/package.json'), 'utf8')) as { version: string }
).version;
const kubectlProgram = (): string => join(kubernetesBinDir(), 'kubectl');
/** The built kubectl with the workspace's admin kubeconfig. */
const kubectl = (workspace: string, ...args: string[]) =>
  runCommand(
    kubectlProgram(),
    ['--kubeconfig', join(workspace, 'constellation-admin.conf'), '--request-timeout=20s', ...args],
    { timeoutMs: 60_000 },
  );
/** Waits (at most a minute) for the pod `name` to have run to completion. */
async function podSucceeded(workspace: string, name: string, description: string): Promise<void> {
  await waitFor(
    async () =>
      (await kubectl(workspace, 'get', 'pod', name, '-o', 'jsonpath={.status.phase}')).stdout.toString() ===
      'Succeeded',
    { timeoutMs: 60_000, description },
  );
}
/** The built kubectl with `kubeconfig`. */
const kubectlWith = (kubeconfig: string, ...args: string[]) =>
  runCommand(kubectlProgram(), ['--kubeconfig', kubeconfig, '--request-timeout=20s', ...args], {
    timeoutMs: 60_000,
  });

/** A kubeconfig for the cluster's API with `user` as credentials (none when undefined). */
async function kubeconfigAs(
  dir: string,
  name: string,
  server: string,
  caPem: string,
  user: { cert: string; key: string } | undefined,
): Promise<string> {
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  const path = join(dir, `${name}.kubeconfig`);
  await writeFile(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: mini, cluster: {server: "${server}", certificate-authority-data: ${b64(caPem)}}}]`,
      `users: [{name: ${name}, user: ${user === undefined ? '{}' : `{client-certificate-data: ${b64(user.cert)}, client-key-data: ${b64(user.key)}}`}}]`,
      `contexts: [{name: ${name}, context: {cluster: mini, user: ${name}}}]`,
      `current-context: ${name}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return path;
}

const bootstrapperLog = (node: { dir: string }): Promise<string> =>
  readFile(unitLog(node.dir, BOOTSTRAPPER_UNIT), 'utf8');

describe('constellation mini', () => {
  it('brings up a cluster whose honest nodes join and whose tampered nodes are refused by PCR or by their event log, then cleans up completely', async () => {
    const workspace = await tempDirForTest();
    // kube-proxy's pods mount these host paths, created when missing: on the host, before nodes had a root of their own.
    const kubeProxyHostPaths = ['/usr/lib/modules', '/run/xtables.lock'];
    const absentBefore: string[] = [];
    for (const path of kubeProxyHostPaths) if (!(await pathExists(path))) absentBefore.push(path);
    const up = await constellation(
      workspace,
      'mini',
      'up',
      ...binDirFlag(),
      '--workers',
      '5',
      '--tampered-workers',
      '3',
      // worker-1 runs a modified bootstrapper and its log says so; worker-2's log claims the
      // image's digest instead; worker-3's log leaves the bootstrapper out.
      '--tamper',
      'bootstrapper,log-digest,log-removed',
    );
    const stateFile = join(workspace, 'constellation-mini', 'mini.json');
    const state = JSON.parse(
      await readFile(stateFile, 'utf8').catch(() => '{"nodes":[],"network":{"namespaces":[],"bridge":""}}'),
    ) as MiniState;
    try {
      // A failed up names its reason here, not only in the clean-up below.
      expect(up.code, up.stderr).toBe(0);
      expect(up.stderr).toContain('init:   ✓ lock node (point of no return)');
      expect(up.stderr).toContain('init:   ✓ kubeadm init');
      const table = up.stdout.toString();
      expect(table).toMatch(/control-plane-0\s+control-plane\s+\S+\s+initialised\s+True\s+measurements match/);
      expect(table).toMatch(/worker-4\s+worker\s+\S+\s+joined\s+True\s+measurements match/);
      expect(table).toMatch(/worker-5\s+worker\s+\S+\s+joined\s+True\s+measurements match/);
      expect(table).toMatch(
        /worker-1\s+worker\s+\S+\s+not joined\s+False\s+attestation rejected: event policy not satisfied: EV_IPL digest sha256:[0-9a-f]{64} is not allowed in PCR 9 \(event 2, PCR 9\) \[rule pcrEventDigests\]/,
      );
      // The logs that lie are refused by their replay, before any value is compared.
      expect(table).toMatch(
        /worker-2\s+worker\s+\S+\s+not joined\s+False\s+attestation rejected: event log does not replay to the quoted PCR 9: its event gives [0-9a-f]{64}, the quote says [0-9a-f]{64} \(events altered, added or removed\)/,
      );
      expect(table).toMatch(
        /worker-3\s+worker\s+\S+\s+not joined\s+False\s+attestation rejected: event log does not replay to the quoted PCR 9: the log has no event for it, the quote says [0-9a-f]{64}, not its reset value \(events removed\)/,
      );

      // The cluster is real: the admin kubeconfig lists exactly the honest nodes.
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(join(workspace, 'constellation-admin.conf'));
      const nodes = (await kc.makeApiClient(k8s.CoreV1Api).listNode()).items.map((n) => n.metadata?.name).sort();
      expect(nodes).toEqual(['control-plane-0', 'worker-4', 'worker-5']);
      // The cluster's configuration holds the image's events as policy, and so does the JoinService's.
      expect(await readFile(join(workspace, 'constellation-conf.yaml'), 'utf8')).toMatch(
        /eventPolicy:\n\s+pcrEventDigests:\n\s+"?4"?:\n\s+- [0-9a-f]{64}\n\s+"?9"?:\n\s+- [0-9a-f]{64}/,
      );
      expect((await readFile(join(workspace, 'constellation-mastersecret.json'))).length).toBeGreaterThan(0);

      // Node preparation ran on every honest node: signed manifest verified, kubeadm installed by digest, kubelet.env last.
      for (const node of state.nodes.filter((n) => !n.tampered)) {
        expect(await readFile(join(node.dir, 'etc', 'kubernetes', 'kubelet.env'), 'utf8')).toBe(
          // mini's release is the built programs'.
          `KUBELET_IMAGE_TAG=${await readFile(join(kubernetesBinDir(), 'release.json'), 'utf8').then((t) => (JSON.parse(t) as { release: string }).release)}\n`,
        );
        expect(await bootstrapperLog(node)).toContain('"message":"component manifest signature verified"');
        // Workers used their tickets only after the JoinService proved its host.
        if (node.role === 'worker')
          expect(await bootstrapperLog(node)).toMatch(
            /"host":"control-plane-0".*"message":"JoinService host proven"|"message":"JoinService host proven".*"host":"control-plane-0"/,
          );
      }

      // Attack (issue 50, item 1): the artifact host serves this directory to anyone on the bridge
      // (nodes, refused ones too, hostNetwork pods); with the manifest signing key in it any of them
      // signed a manifest of its own with a higher serial. Nothing served may be a private key.
      const served = join(workspace, 'constellation-mini', 'artifacts');
      const servedFiles = (await readdir(served, { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
      expect(servedFiles.length).toBeGreaterThan(0);
      for (const entry of servedFiles) {
        const text = await readFile(join(entry.parentPath, entry.name), 'utf8');
        expect(text, entry.name).not.toMatch(/PRIVATE KEY/);
      }

      // Attack (issue 50, item 6): a node's mount namespace was a copy of the host's, so its
      // processes (a tampered node's, a pod's host path) read the operator's secrets, other
      // nodes' keys, mini's vendor keys and its own TPM's state. Read as worker-1 (tampered) would.
      const worker1 = state.nodes.find((n) => n.name === 'worker-1');
      const controlPlane0 = state.nodes.find((n) => n.name === 'control-plane-0');
      const mountNamespace =
        (await readNodeEnvironment(worker1?.dir ?? ''))?.mountNamespace ?? 'worker-1 has no record';
      // And with a root of its own, nothing else of the host: not the host's secrets in /etc, not
      // the checkout mini runs from.
      const secrets = [
        '/etc/shadow',
        join(root, 'package.json'),
        join(workspace, 'constellation-admin.conf'),
        join(workspace, 'constellation-mastersecret.json'),
        join(controlPlane0?.dir ?? '', 'etc', 'kubernetes', 'pki', 'ca.key'),
        join(worker1?.dir ?? '', 'tpm', 'swtpm.sock.ctrl'),
        join(homedir(), '.config', 'constellation', 'mini-vendor', 'manifest-signing-key.asc'),
      ];
      for (const secret of secrets) {
        const read = await runCommand('nsenter', [`--mount=${mountNamespace}`, '--', 'cat', secret], {
          timeoutMs: 10_000,
        });
        expect(read.code, secret).not.toBe(0);
        expect(read.stderr, secret).toContain('No such file or directory');
      }
      const ownTpm = await runCommand(
        'nsenter',
        [`--mount=${mountNamespace}`, '--', 'ls', '-A', join(worker1?.dir ?? '', 'tpm')],
        {
          timeoutMs: 10_000,
        },
      );
      expect(ownTpm.stdout.toString().trim()).toBe('swtpm.sock');

      // status and the JoinService's log say why, naming the event or the PCR that does not replay.
      const status = await constellation(workspace, 'status');
      expect(status.code).toBe(0);
      expect(status.stdout.toString()).toMatch(
        /worker-1\s+worker\s+False\s+refused\s+NOT JOINED: attestation rejected: event policy not satisfied: EV_IPL digest sha256:[0-9a-f]{64} is not allowed in PCR 9 \(event 2, PCR 9\)/,
      );
      expect(status.stdout.toString()).toMatch(
        /worker-2\s+worker\s+False\s+refused\s+NOT JOINED: attestation rejected: event log does not replay to the quoted PCR 9/,
      );
      // The JoinService's log is its pod's: kubectl logs, through the node's kubelet.
      const logs = await kubectl(workspace, 'logs', '-n', 'kube-system', '-l', 'k8s-app=join-service', '--tail=-1');
      expect(logs.code, logs.stderr).toBe(0);
      const joinLog = logs.stdout.toString();
      const refusals = joinLog.split('\n').filter((line) => line.includes('"message":"challenge refused"'));
      const refusedFor = (reason: string, error: RegExp): boolean =>
        refusals.some((line) => line.includes(`"reason":"${reason}"`) && error.test(line));
      expect(refusedFor('attestation:event-policy', /EV_IPL digest sha256:[0-9a-f]{64} is not allowed in PCR 9/)).toBe(
        true,
      );
      expect(refusedFor('attestation:event-log', /does not replay to the quoted PCR 9: its event gives/)).toBe(true);
      expect(refusedFor('attestation:event-log', /does not replay to the quoted PCR 9: the log has no event/)).toBe(
        true,
      );
      // It runs with the image's events as policy (join-config's attestationConfig).
      expect(
        joinLog
          .split('\n')
          .some(
            (line) =>
              line.includes('"message":"measurements loaded"') && line.includes('"eventRules":["pcrEventDigests"]'),
          ),
      ).toBe(true);
      expect(joinLog).not.toMatch(/"token":"[a-z0-9]{6}\.[a-z0-9]{16}"/);

      // Every honest worker was admitted under tpm2-ek with exactly the EK the platform registered.
      const issued = joinLog
        .split('\n')
        .filter((l) => l.includes('"message":"join ticket issued"'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      for (const node of state.nodes.filter((n) => n.role === 'worker' && !n.tampered)) {
        expect(node.ekPublicKeyHash).toMatch(/^[0-9a-f]{64}$/);
        expect(issued.find((e) => e['node'] === node.name)?.['machine']).toBe(node.ekPublicKeyHash);
      }
      expect(up.stderr).toMatch(/init: node identity proven: TPM endorsement key sha256:[0-9a-f]{64}/);

      // No node can reach another node's TPM: swtpm listens on owner-only unix sockets in each
      // node's directory and on no TCP or UDP port at all (before, anyone on the bridge could reset
      // or clone a TPM through its TCP control port).
      for (const node of state.nodes) {
        for (const socket of [node.tpmSocket, `${node.tpmSocket}.ctrl`]) {
          const info = await stat(socket);
          expect(info.isSocket()).toBe(true);
          expect(info.mode & 0o777).toBe(0o600);
        }
      }
      const listening = await runCommand('ss', ['-H', '-tulpn'], { timeoutMs: 10_000 });
      for (const node of state.nodes) expect(listening.stdout.toString()).not.toContain(`pid=${node.swtpmPid},`);

      // The API server is the real one: the built kubectl mini printed reads its metrics.
      expect(table).toContain(
        `kubectl: ${kubectlProgram()} --kubeconfig ${join(workspace, 'constellation-admin.conf')}`,
      );
      const metrics = await kubectl(workspace, 'get', '--raw', '/metrics');
      expect(metrics.code, metrics.stderr).toBe(0);
      expect(metrics.stdout.toString()).toMatch(/^apiserver_request_total\{.*\} \d+$/m);

      // Real nodes: the kubelet and containerd of the built release on every honest node, the control
      // plane and the JoinService as pods.
      const wide = await kubectl(workspace, 'get', 'nodes', '-o', 'wide');
      for (const name of ['control-plane-0', 'worker-4', 'worker-5'])
        expect(wide.stdout.toString()).toMatch(
          new RegExp(`${name}\\s+Ready\\s+\\S+\\s+\\S+\\s+v1\\.37\\.2\\s.*containerd://2\\.`),
        );
      // Running, and Ready as their probes say (the scheduler's comes a few seconds after its start).
      for (const pod of ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler']) {
        const ready = await kubectl(
          workspace,
          'wait',
          '-n',
          'kube-system',
          '--for=condition=Ready',
          `pod/${pod}-control-plane-0`,
          '--timeout=60s',
        );
        expect(ready.code, ready.stderr).toBe(0);
      }
      const pods = await kubectl(workspace, 'get', 'pods', '-n', 'kube-system', '-o', 'wide');
      for (const pod of ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'])
        expect(pods.stdout.toString()).toMatch(new RegExp(`${pod}-control-plane-0\\s+1/1\\s+Running\\s`));
      expect(pods.stdout.toString()).toMatch(/join-service-[a-z0-9]{5}\s+1\/1\s+Running\s.*control-plane-0/);
      const described = await kubectl(workspace, 'describe', 'node', 'worker-4');
      expect(described.code, described.stderr).toBe(0);
      expect(described.stdout.toString()).toContain('Kubelet Version:            v1.37.2');
      // A pod from an image the node carries (no registry), on a worker; exec into it.
      const run = await kubectl(
        workspace,
        'run',
        'try-me',
        '--image=localhost/constellation/busybox:mini',
        '--image-pull-policy=Never',
        '--overrides={"spec":{"nodeName":"worker-5"}}',
        '--',
        'sleep',
        '3600',
      );
      expect(run.code, run.stderr).toBe(0);
      const ready = await kubectl(workspace, 'wait', '--for=condition=Ready', 'pod/try-me', '--timeout=60s');
      expect(ready.code, ready.stderr).toBe(0);
      const exec = await kubectl(workspace, 'exec', 'try-me', '--', 'sh', '-c', 'echo "$(hostname) says hello"');
      expect(exec.stdout.toString()).toBe('try-me says hello\n');
      // Pods on different nodes reach each other (routes between the nodes' pod subnets).
      const podIp = (
        await kubectl(workspace, 'get', 'pod', 'try-me', '-o', 'jsonpath={.status.podIP}')
      ).stdout.toString();
      expect(podIp).toMatch(/^10\.244\.\d+\.\d+$/);
      const ping = await kubectl(
        workspace,
        'run',
        'ping-across',
        '--image=localhost/constellation/busybox:mini',
        '--image-pull-policy=Never',
        '--restart=Never',
        '--overrides={"spec":{"nodeName":"worker-4"}}',
        '--',
        'ping',
        '-c',
        '2',
        '-W',
        '5',
        podIp,
      );
      expect(ping.code, ping.stderr).toBe(0);
      await podSucceeded(workspace, 'ping-across', 'a pod on worker-4 pinging the pod on worker-5');

      // Services and cluster DNS, as on any kubeadm cluster: kube-proxy on every node, CoreDNS
      // Ready, and a pod on worker-4 reaches a web server on worker-5 by its Service's name.
      const kubeSystemPods = (app: string, ...output: string[]) =>
        kubectl(workspace, 'get', 'pods', '-n', 'kube-system', '-l', `k8s-app=${app}`, ...output);
      const proxies = await kubeSystemPods('kube-proxy', '-o', 'wide', '--no-headers');
      for (const name of ['control-plane-0', 'worker-4', 'worker-5'])
        expect(proxies.stdout.toString()).toMatch(new RegExp(`\\s1/1\\s+Running\\s.*\\s${name}\\s`));
      // What kube-proxy made of its host paths is in each node's root, not the host's.
      for (const path of absentBefore) expect(await pathExists(path), path).toBe(false);
      const dns = await kubectl(
        workspace,
        'wait',
        '-n',
        'kube-system',
        '--for=condition=Ready',
        'pod',
        '-l',
        'k8s-app=kube-dns',
        '--timeout=90s',
      );
      expect(dns.code, dns.stderr).toBe(0);
      // Spread over two nodes (mini up restarts CoreDNS once workers are Ready): before, both
      // replicas stayed on control-plane-0, where init had scheduled them.
      const dnsNodes = await kubeSystemPods('kube-dns', '-o', 'jsonpath={.items[*].spec.nodeName}');
      expect(
        new Set(dnsNodes.stdout.toString().trim().split(' ')).size,
        dnsNodes.stdout.toString(),
      ).toBeGreaterThanOrEqual(2);
      const web = await kubectl(
        workspace,
        'run',
        'web',
        '--image=localhost/constellation/busybox:mini',
        '--image-pull-policy=Never',
        '--port=8080',
        '--expose',
        '--overrides={"spec":{"nodeName":"worker-5"}}',
        '--',
        'httpd',
        '-f',
        '-p',
        '8080',
        '-h',
        '/etc',
      );
      expect(web.code, web.stderr).toBe(0);
      expect((await kubectl(workspace, 'wait', '--for=condition=Ready', 'pod/web', '--timeout=60s')).code).toBe(0);
      const fetched = await kubectl(
        workspace,
        'run',
        'fetch-by-name',
        '--image=localhost/constellation/busybox:mini',
        '--image-pull-policy=Never',
        '--restart=Never',
        '--overrides={"spec":{"nodeName":"worker-4"}}',
        '--',
        'sh',
        '-c',
        // busybox's nc: its static wget crashes looking up the "http" service.
        'printf "GET /hostname HTTP/1.0\\r\\n\\r\\n" | nc -w 5 web.default.svc.cluster.local 8080',
      );
      expect(fetched.code, fetched.stderr).toBe(0);
      await podSucceeded(workspace, 'fetch-by-name', 'a pod on worker-4 fetching from the web Service by name');

      // Attack (issue 50, item 6): a tenant's pod mounting the worker's root read every node's files
      // and the operator's. Pod Security baseline is every namespace's default but kube-system's.
      const hostRoot = await kubectl(
        workspace,
        'run',
        'read-the-node',
        '--image=localhost/constellation/busybox:mini',
        '--image-pull-policy=Never',
        '--overrides={"spec":{"nodeName":"worker-4","volumes":[{"name":"root","hostPath":{"path":"/"}}]}}',
        '--',
        'ls',
        '/',
      );
      expect(hostRoot.code).not.toBe(0);
      expect(hostRoot.stderr).toContain('violates PodSecurity "baseline:latest": hostPath volumes (volume "root")');
      expect((await kubectl(workspace, 'logs', 'fetch-by-name')).stdout.toString()).toMatch(
        /^HTTP\/1\.1 200 OK\r?\n[^]*\r?\n\r?\nweb\n$/,
      );

      // A name outside the cluster is refused at once (the node's resolver answers nothing): no
      // lookup leaves the machine.
      const outside = await kubectl(workspace, 'exec', 'try-me', '--', 'nslookup', 'example.com');
      expect(outside.stdout.toString()).toContain("server can't find example.com: SERVFAIL");

      // A second mini up does not break the running cluster.
      const again = await constellation(workspace, 'mini', 'up', ...binDirFlag());
      expect(again.code).toBe(2);
      expect(again.stderr).toMatch(/a mini cluster is already running in .* run `.+ mini down` first/);
    } finally {
      // The stop command mini printed runs exactly as printed.
      const printed = /^up in [\d.]+ s; stop with: (.+)$/m.exec(up.stdout.toString())?.[1];
      const down =
        printed === undefined
          ? await constellation(workspace, 'mini', 'down')
          : await runCommand('bash', ['-c', printed], { timeoutMs: 180_000 });
      // Asserted only when up succeeded: a failed up already failed above, with its reason, which
      // an assertion thrown here would hide.
      if (up.code === 0) expect(printed).toBeDefined();
      expect(down.code).toBe(0);
    }
    const pids = [state.metadataPid, ...state.nodes.map((n) => n.swtpmPid)];
    expect(pids.length).toBe(7);
    expect(pids.filter(isRunning)).toEqual([]);
    // Nothing of the nodes is left: no mounts (namespaces, pod volumes), no cgroups.
    const mounts = await readFile('/proc/self/mountinfo', 'utf8');
    for (const ns of state.network.namespaces) {
      expect(mounts).not.toContain(`${ns}.mnt`);
      for (const hierarchy of ['cpu', 'memory', 'pids', 'unified'])
        expect(await pathExists(`/sys/fs/cgroup/${hierarchy}/constellation-${ns}`)).toBe(false);
    }
    expect(mounts).not.toContain(workspace);
    // As root each node had its own network namespace on a bridge: both are gone too.
    if (process.getuid?.() === 0) expect(state.network.mode).toBe('namespaces');
    const namespaces = await runCommand('ip', ['netns', 'list'], { timeoutMs: 10_000 });
    for (const ns of state.network.namespaces) expect(namespaces.stdout.toString()).not.toContain(ns);
    if (state.network.bridge !== '') {
      const bridge = await runCommand('ip', ['link', 'show', state.network.bridge], { timeoutMs: 10_000 });
      expect(bridge.code).not.toBe(0);
    }
    const left = await runCommand('pgrep', ['-f', workspace], { timeoutMs: 10_000 });
    expect(left.stdout.toString().trim()).toBe('');
    expect(await readdir(workspace)).toEqual([]);
  }, 300_000);

  it('verifies nodes on demand, rejoins a rebooted worker, and recovers a control plane after a full shutdown, all after the build it came from is gone', async () => {
    const workspace = await tempDirForTest();
    try {
      // Up from a copy of the build, which is then deleted as a rebuild deletes the files it
      // rewrites: the nodes and their services run from the image mini up copied.
      const build = await tempDirForTest();
      for (const path of [
        'apps/cli/dist',
        'apps/bootstrapper/dist',
        'apps/joinservice/dist',
        'apps/joinservice/package.json',
        `dist/release/joinservice-image-${JOINSERVICE_VERSION}.oci.tar`,
        'deploy/joinservice',
      ])
        await copy(join(root, path), join(build, path), { recursive: true, preserveTimestamps: true });
      const up = await runCommand(
        process.execPath,
        [
          join(build, 'apps/cli/dist/constellation.mjs'),
          '--workspace',
          workspace,
          'mini',
          'up',
          ...binDirFlag(),
          '--workers',
          '1',
        ],
        { timeoutMs: 180_000 },
      );
      expect(up.code, up.stderr).toBe(0);
      for (const dir of ['apps', 'dist']) await rm(join(build, dir), { recursive: true });
      const state = JSON.parse(await readFile(join(workspace, 'constellation-mini', 'mini.json'), 'utf8')) as MiniState;
      const [cp, worker] = state.nodes;
      if (cp === undefined || worker === undefined) throw new Error('nodes missing');
      const log = bootstrapperLog;

      const verified = await constellation(
        workspace,
        'verify',
        '--node',
        `${worker.ip}:${worker.verifyPort}`,
        '--output',
        'json',
      );
      expect(verified.code, verified.stderr).toBe(0);
      const report = JSON.parse(verified.stdout.toString()) as {
        pcrs: { pcr: number; matches: boolean; actual: string }[];
        eventPolicyViolations: string[];
      };
      expect(report.pcrs.map((p) => [p.pcr, p.matches])).toEqual([
        [4, true],
        [9, true],
        [15, true],
      ]);
      expect(report.pcrs.find((p) => p.pcr === 15)?.actual).not.toBe('0'.repeat(64));
      expect(report.eventPolicyViolations).toEqual([]);

      // A changed expectation is reported PCR by PCR and fails the command.
      const config = join(workspace, 'constellation-conf.yaml');
      const original = await readFile(config, 'utf8');
      await writeFile(config, original.replace(/(4:\n\s+expected: ")[0-9a-f]{64}/, `$1${'ab'.repeat(32)}`));
      const mismatch = await constellation(workspace, 'verify', '--node', `${worker.ip}:${worker.verifyPort}`);
      expect(mismatch.code).toBe(1);
      expect(mismatch.stdout.toString()).toMatch(/PCR {2}4 {2}MISMATCH {2}expected (ab){32}/);
      expect(mismatch.stderr).toContain('does not match the expected measurements: PCR 4');
      // ...with the events that extended it, from the node's log replayed against its quote.
      expect(mismatch.stdout.toString()).toMatch(
        /extended by 1 event \(data untrusted unless the digests confirm it\):\n\s+#1 {2}PCR 4 {2}EV_EFI_BOOT_SERVICES_APPLICATION/,
      );
      expect(mismatch.stdout.toString()).toMatch(/^event log: \d+ events, replayed to the quote$/m);
      // A bootstrapper digest the policy does not allow is named by its event.
      await writeFile(config, original.replace(/("?9"?:\n\s+- )[0-9a-f]{64}/, `$1${'cd'.repeat(32)}`));
      const disallowed = await constellation(workspace, 'verify', '--node', `${worker.ip}:${worker.verifyPort}`);
      expect(disallowed.code).toBe(1);
      expect(disallowed.stdout.toString()).toMatch(
        /^EVENT POLICY {2}.*EV_IPL digest sha256:[0-9a-f]{64} is not allowed in PCR 9 \(event 2, PCR 9\) \[rule pcrEventDigests\]$/m,
      );
      expect(disallowed.stderr).toContain('does not satisfy the event policy');
      await writeFile(config, original);

      expect((await constellation(workspace, 'mini', 'reboot', 'worker-1')).code).toBe(0);
      await waitFor(async () => (await log(worker)).includes('"source":"rejoin-ticket"'), {
        timeoutMs: 60_000,
        description: 'the worker to rejoin',
      });

      const reboot = await constellation(workspace, 'mini', 'reboot', 'control-plane-0', '--stop-joinservice');
      expect(reboot.stderr).toContain(`recover --endpoint ${cp.ip}:${cp.recoveryPort}`);
      await waitFor(async () => (await log(cp)).split('recovery server listening').length > 1, {
        timeoutMs: 60_000,
        description: 'the recovery server',
      });
      const recovered = await constellation(workspace, 'recover', '--endpoint', `${cp.ip}:${cp.recoveryPort}`);
      expect(recovered.stderr).toBe('');
      expect(recovered.code).toBe(0);
      expect(recovered.stdout.toString()).toMatch(/recovered: state disk [0-9a-f-]{36} open, cluster [0-9a-f]{64}/);
      await waitFor(async () => (await log(cp)).includes('"source":"recovery"'), {
        timeoutMs: 30_000,
        description: 'the control plane to rejoin',
      });
    } finally {
      expect((await constellation(workspace, 'mini', 'down')).code).toBe(0);
    }
  }, 300_000);

  it('mini reboot of a cluster an older CLI started (no node image in mini.json) says what to do (both commands run as printed) and touches nothing', async () => {
    const workspace = await tempDirForTest();
    const dir = join(workspace, 'constellation-mini');
    await mkdir(dir, { recursive: true });
    const node = { name: 'worker-1', role: 'worker', dir: join(dir, 'worker-1'), bootstrapperPid: -1, swtpmPid: -1 };
    const state = { startedAt: 'then', dir, metadataPid: -1, network: { mode: 'loopback' }, nodes: [node] };
    await writeFile(join(dir, 'mini.json'), JSON.stringify(state));
    const reboot = await constellation(workspace, 'mini', 'reboot', 'worker-1');
    expect(reboot.code).toBe(2);
    expect(reboot.stderr).toMatch(
      /the mini cluster in .* was started by an older constellation, which kept no node image: run `.+ mini down`, then `.+ mini up`$/m,
    );
    expect(JSON.parse(await readFile(join(dir, 'mini.json'), 'utf8'))).toEqual(state);
    // Both commands it names run exactly as printed.
    const [, down, up] = /run `(.+ mini down)`, then `(.+ mini up)`$/m.exec(reboot.stderr) ?? [];
    try {
      expect((await runCommand('bash', ['-c', down ?? 'false'], { timeoutMs: 60_000 })).code).toBe(0);
      // The programs' directory from the environment, which the flag also reads.
      const again = await runCommand('bash', ['-c', up ?? 'false'], {
        timeoutMs: 180_000,
        env: { ...process.env, CONSTELLATION_KUBERNETES_BIN_DIR: kubernetesBinDir() },
      });
      expect(again.code, again.stderr).toBe(0);
    } finally {
      expect((await constellation(workspace, 'mini', 'down')).code).toBe(0);
    }
  }, 300_000);

  it('mini down on an empty workspace says so and succeeds', async () => {
    const result = await constellation(await tempDirForTest(), 'mini', 'down');
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('no mini cluster in');
  });
});

describe('mini as a cluster kubectl can drive', () => {
  it('three control planes and two workers: kubectl sees them Ready, strangers get 403, a control plane reboots and all recover', async () => {
    // A space in the path, as under "My Projects": every command mini hands a node must survive it.
    const workspace = join(await tempDirForTest(), 'my cluster');
    await mkdir(workspace);
    const admin = join(workspace, 'constellation-admin.conf');
    try {
      const up = await constellation(
        workspace,
        'mini',
        'up',
        '--kubernetes-bin-dir',
        kubernetesBinDir(),
        '--control-planes',
        '3',
        '--workers',
        '2',
      );
      expect(up.stderr).not.toContain('error');
      expect(up.code).toBe(0);
      const state = JSON.parse(await readFile(join(workspace, 'constellation-mini', 'mini.json'), 'utf8')) as MiniState;
      for (const name of ['control-plane-0', 'control-plane-1', 'control-plane-2', 'worker-1', 'worker-2'])
        expect(up.stdout.toString()).toMatch(
          new RegExp(`${name}\\s+\\S+\\s+\\S+\\s+(initialised|joined)\\s+True\\s+measurements match`),
        );

      // kubectl, the real client, with the admin kubeconfig init wrote (printers.go columns).
      const nodes = await kubectlWith(admin, 'get', 'nodes');
      expect(nodes.code).toBe(0);
      for (const cp of ['control-plane-0', 'control-plane-1', 'control-plane-2'])
        expect(nodes.stdout.toString()).toMatch(new RegExp(`${cp}\\s+Ready\\s+control-plane\\s`));
      for (const worker of ['worker-1', 'worker-2'])
        expect(nodes.stdout.toString()).toMatch(new RegExp(`${worker}\\s+Ready\\s+<none>\\s`));
      const leases = await kubectlWith(admin, 'get', 'leases', '-A');
      expect(leases.stdout.toString()).toMatch(/kube-system\s+constellation-control-plane-join\s+control-plane-[12]\s/);
      // No bootstrap token at all: kubeadm init's own is gone, and four nodes joined (two of them
      // control planes) by kubeadm's file discovery with their tickets' certificates, minting none.
      const tokens = await kubectlWith(
        admin,
        'get',
        'secrets',
        '-n',
        'kube-system',
        '--field-selector',
        'type=bootstrap.kubernetes.io/token',
        '-o',
        'name',
      );
      expect(tokens.code).toBe(0);
      expect(tokens.stdout.toString().trim()).toBe('');
      // kubeadm's kubelet TLS bootstrap grants are gone: no bootstrap token could get a node's
      // client certificate (the tickets carry each node's own).
      for (const binding of ['kubeadm:kubelet-bootstrap', 'kubeadm:node-autoapprove-bootstrap']) {
        const lookup = await kubectlWith(admin, 'get', 'clusterrolebinding', binding);
        expect(lookup.stderr).toContain(`clusterrolebindings.rbac.authorization.k8s.io "${binding}" not found`);
      }

      // Strangers: no credentials → system:anonymous (kube-apiserver as kubeadm runs it keeps anonymous
      // requests on, for /readyz and the like), which RBAC grants nothing here → 403; a worker's
      // kubelet certificate → 403 (node authorizer + RBAC).
      const [first, , , worker] = state.nodes;
      if (first === undefined || worker === undefined) throw new Error('nodes missing');
      const caPem = await readFile(join(first.dir, 'etc', 'kubernetes', 'pki', 'ca.crt'), 'utf8');
      const server = `https://${first.ip}:${state.apiServerPort}`;
      // The request itself (--raw): kubectl's discovery as anonymous is already forbidden on the
      // API server as kubeadm runs it, and would hide the answer to the request.
      const anonymous = await kubectlWith(
        await kubeconfigAs(workspace, 'anonymous', server, caPem, undefined),
        'get',
        '--raw',
        '/api/v1/namespaces/kube-system/secrets',
        // Without these kubectl prompts for them; basic auth authenticates nobody since 1.19.
        '--username=nobody',
        '--password=nothing',
      );
      expect(anonymous.code).not.toBe(0);
      expect(anonymous.stderr).toContain(
        'Error from server (Forbidden): secrets is forbidden: User "system:anonymous" cannot list resource "secrets" in API group "" in the namespace "kube-system"',
      );
      const kubeletPem = await readFile(
        join(worker.dir, 'var', 'lib', 'kubelet', 'pki', 'kubelet-client-current.pem'),
        'utf8',
      );
      const certPem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/.exec(kubeletPem)?.[0] ?? '';
      const keyPem =
        /-----BEGIN (?:EC |RSA )?PRIVATE KEY-----[\s\S]+?-----END (?:EC |RSA )?PRIVATE KEY-----\n?/.exec(
          kubeletPem,
        )?.[0] ?? '';
      const asWorker = await kubeconfigAs(workspace, 'worker', server, caPem, { cert: certPem, key: keyPem });
      const forbidden = await kubectlWith(asWorker, 'get', 'secrets', '-n', 'kube-system');
      expect(forbidden.code).not.toBe(0);
      expect(forbidden.stderr).toContain(
        `secrets is forbidden: User "system:node:${worker.name}" cannot list resource "secrets" in API group "" in the namespace "kube-system"`,
      );

      // The CLI on the PATH: npx constellation status shows Ready and attestation from the API.
      const status = await runCommand('npx', ['--no-install', 'constellation', '--workspace', workspace, 'status'], {
        timeoutMs: 60_000,
        cwd: root,
      });
      expect(status.stderr).not.toContain('could not determine executable');
      expect(status.code).toBe(0);
      for (const node of state.nodes)
        expect(status.stdout.toString()).toMatch(new RegExp(`${node.name}\\s+\\S+\\s+True\\s+attested`));

      // The first control plane reboots: the API endpoint (the load balancer in front of the control
      // planes) keeps answering, and the node rejoins.
      expect((await constellation(workspace, 'mini', 'reboot', first.name)).code).toBe(0);
      expect((await kubectlWith(admin, 'get', 'nodes')).code).toBe(0);
      await waitFor(async () => (await bootstrapperLog(first)).includes('"source":"rejoin-ticket"'), {
        timeoutMs: 60_000,
        description: `${first.name} to rejoin`,
      });

      // Full control-plane shutdown: every control plane reboots without JoinService; recover brings them back.
      const controlPlanes = state.nodes.filter((n) => n.role === 'control-plane');
      const listening = async (cp: MiniNode): Promise<number> =>
        (await bootstrapperLog(cp)).split('recovery server listening').length - 1;
      const before = await Promise.all(controlPlanes.map(listening));
      for (const [i, cp] of controlPlanes.entries()) {
        const args = ['mini', 'reboot', cp.name, ...(i === 0 ? ['--stop-joinservice'] : [])];
        expect((await constellation(workspace, ...args)).code).toBe(0);
      }
      for (const [i, cp] of controlPlanes.entries())
        await waitFor(async () => (await listening(cp)) > (before[i] ?? 0), {
          timeoutMs: 60_000,
          description: `${cp.name} waiting for recovery`,
        });
      const recovered = await Promise.all(
        controlPlanes.map((cp) => constellation(workspace, 'recover', '--endpoint', `${cp.ip}:${cp.recoveryPort}`)),
      );
      for (const result of recovered) {
        expect(result.stderr).toBe('');
        expect(result.stdout.toString()).toMatch(/recovered: state disk [0-9a-f-]{36} open, cluster [0-9a-f]{64}/);
      }
      for (const cp of controlPlanes) {
        await waitFor(async () => (await bootstrapperLog(cp)).includes('"source":"recovery"'), {
          timeoutMs: 60_000,
          description: `${cp.name} to come back`,
        });
      }
      // The kubelets started again after the recovery: the control planes' static pods came back
      // (etcd has its quorum), every node is Ready, and each control plane runs its JoinService pod.
      await waitFor(
        async () => {
          const ready = await kubectlWith(admin, 'get', 'nodes', '--no-headers');
          const lines = ready.stdout.toString().trim().split('\n');
          return lines.length === state.nodes.length && lines.every((line) => /\sReady\s/.test(line));
        },
        { timeoutMs: 120_000, description: 'every node Ready again' },
      );
      await waitFor(
        async () => {
          const pods = await kubectlWith(
            admin,
            'get',
            'pods',
            '-n',
            'kube-system',
            '-l',
            'k8s-app=join-service',
            '--no-headers',
          );
          return (
            pods.stdout
              .toString()
              .split('\n')
              .filter((line) => /\s1\/1\s+Running\s/.test(line)).length === 3
          );
        },
        { timeoutMs: 120_000, description: "every control plane's JoinService pod Running" },
      );
    } finally {
      expect((await constellation(workspace, 'mini', 'down')).code).toBe(0);
    }
  }, 900_000);
});

describe('the upstream conformance suite on mini', () => {
  it(
    'passes the fast subset (tools/conformance/fast-subset.txt) on one control plane and two workers',
    async () => {
      const workspace = await tempDirForTest();
      const up = await constellation(workspace, 'mini', 'up', ...binDirFlag(), '--workers', '2');
      try {
        expect(up.code, up.stderr).toBe(0);
        const names = (await readFile(join(root, 'tools/conformance/fast-subset.txt'), 'utf8'))
          .split('\n')
          .map((line) => line.trim())
          .filter((line) => line !== '' && !line.startsWith('#'));
        // Matched as text anywhere in the spec's name (ginkgo adds its labels after it): each
        // name of the file matches exactly one spec of the release.
        const literally = (name: string): string => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        // The suite's own bound is 10 minutes; the test's leaves room for importing the test images.
        // npm run conformance, without npm in between (the test's bound stops the runner itself).
        const run = await runCommand(
          process.execPath,
          [
            '--conditions=@constellation/source',
            '--import',
            'tsx',
            join(root, 'tools/conformance/run.ts'),
            '--workspace',
            workspace,
            '--procs',
            '4',
            '--timeout',
            '10m',
            '--report-dir',
            join(workspace, 'conformance'),
            ...names.flatMap((name) => ['--focus', literally(name)]),
          ],
          { timeoutMs: 14 * 60_000, cwd: root },
        );
        const output = `${run.stdout.toString()}\n${run.stderr}`;
        expect(run.code, output.slice(-6000)).toBe(0);
        expect(output).toMatch(new RegExp(`^${names.length} passed, 0 failed`, 'm'));
      } finally {
        expect((await constellation(workspace, 'mini', 'down')).code).toBe(0);
      }
    },
    20 * 60_000,
  );
});
