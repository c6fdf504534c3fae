import { chmod } from 'node:fs/promises';
import { repoRoot, runCommand, runTypeScript, tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';

const entry = new URL('./main.ts', import.meta.url).pathname;
const run = (...args: string[]) => runTypeScript(entry, args, { timeoutMs: 30_000 });

describe('constellation CLI entry point', () => {
  it('lists every command in --help, with examples', async () => {
    const result = await run('--help');
    expect(result.code).toBe(0);
    const help = result.stdout.toString();
    for (const command of ['config', 'init|apply', 'verify', 'status', 'recover', 'mini']) {
      expect(help).toContain(command);
    }
    expect(help).toContain('Examples:');
  });

  it("explains init's conformance mode (kube-proxy) in its help", async () => {
    const result = await run('init', '--help');
    expect(result.code).toBe(0);
    const help = result.stdout.toString().replace(/\s+/g, ' ');
    expect(help).toContain('--conformance conformance mode: the cluster runs kube-proxy');
    expect(help).toContain('constellation init --conformance # with kube-proxy, for the Kubernetes conformance suite');
  });

  it('exits 2 for unknown flags and for invalid values, naming them', async () => {
    // With mini up's mandatory option given: commander names a missing one before an unknown one.
    const unknown = await run('mini', 'up', '--kubernetes-bin-dir', '/nowhere', '--nodes', '3');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--nodes'");
    const invalid = await run('mini', 'up', '--kubernetes-bin-dir', '/nowhere', '--workers', 'many');
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('expected a whole number from 0 to 64, got "many"');
    const missing = await run('verify');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("required option '--node <host[:port]>' not specified");
    // Without --kubernetes-bin-dir, mini up takes the newest build in the cache: none in an empty one.
    const env: NodeJS.ProcessEnv = { ...process.env, CONSTELLATION_CACHE_DIR: '/nonexistent-cache' };
    delete env['CONSTELLATION_KUBERNETES_BIN_DIR'];
    const noPrograms = await runTypeScript(entry, ['mini', 'up'], { timeoutMs: 30_000, env });
    expect(noPrograms.code).toBe(2);
    expect(noPrograms.stderr).toContain(
      'mini up needs the built Kubernetes programs and node images, and /nonexistent-cache/kubernetes has none: run `npm run mini` in the checkout',
    );
  });

  it('refuses mini up when not run as root, saying why (it once offered a --network loopback it always refused)', async () => {
    const workspace = await tempDirForTest();
    await chmod(workspace, 0o777);
    // As nobody, with a home of its own (tsx and npm write caches there).
    const asNobody = await runCommand(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        'env',
        `HOME=${workspace}`,
        process.execPath,
        '--conditions=@constellation/source',
        '--import',
        'tsx',
        entry,
        '--workspace',
        workspace,
        'mini',
        'up',
      ],
      { timeoutMs: 30_000, cwd: repoRoot() },
    );
    expect(asNobody.code, asNobody.stderr).toBe(2);
    expect(asNobody.stderr).toContain(
      'mini needs root: each node is a network and mount namespace of its own, with cgroups of its own (run it as root)',
    );
    const network = await run('mini', 'up', '--network', 'loopback');
    expect(network.stderr).toContain("unknown option '--network'");
  });

  it('names the missing file when a command needs workspace files that are not there', async () => {
    const result = await run('--workspace', '/nonexistent-workspace', 'recover', '--endpoint', '127.0.0.1');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'no config at /nonexistent-workspace/constellation-conf.yaml: run `constellation config generate` first',
    );
  });
});

describe('constellation config generate', () => {
  it('writes a commented config that names what to fill in, and refuses to overwrite without --force', async () => {
    const { tempDirForTest } = await import('@constellation/testing');
    const { loadClusterConfig } = await import('./constellation-conf.js');
    const { createEkCa } = await import('@constellation/swtpm');
    const workspace = await tempDirForTest();
    // Without pinned EK roots the config names the field to fill in before init.
    const bare = await run('--workspace', workspace, 'config', 'generate');
    expect(bare.code).toBe(0);
    expect(bare.stderr).toContain("your TPMs' EK CA roots under attestation.ekCertificateAuthorities.roots");
    expect(bare.stderr).toContain("the first control-plane machine's EK hash under attestation.firstControlPlaneEk");
    await expect(loadClusterConfig(`${workspace}/constellation-conf.yaml`)).rejects.toThrow(
      'attestation.ekCertificateAuthorities.roots: must hold at least one PEM certificate (the EK CA roots to pin)',
    );
    const bogus = await run('--workspace', workspace, 'config', 'generate', '--force', '--ek-roots', '/etc/hostname');
    expect(bogus.code).toBe(2);
    expect(bogus.stderr).toContain('--ek-roots: /etc/hostname holds no PEM certificate');
    const ca = await createEkCa(`${workspace}/ek-ca`);
    const first = await run('--workspace', workspace, 'config', 'generate', '--force', '--ek-roots', ca.rootCertPath);
    expect(first.code).toBe(0);
    // PCR 15 alone measures no software: the config is refused until the image's PCRs are in.
    expect(first.stderr).toContain("add your node image's measurements under attestation.measurements");
    await expect(loadClusterConfig(`${workspace}/constellation-conf.yaml`)).rejects.toThrow(
      /attestation: the measurements enforce no boot measurement \(only PCR 15\)/,
    );
    const { readFile, writeFile } = await import('node:fs/promises');
    const text = await readFile(`${workspace}/constellation-conf.yaml`, 'utf8');
    expect(text).toContain('# What every node must prove');
    // With a PCR of the image filled in, it loads.
    const filled = text.replace(/^( +)"?15"?:/m, `$1"9": { expected: "${'1'.repeat(64)}", warnOnly: false }\n$1"15":`);
    await writeFile(`${workspace}/constellation-conf.yaml`, filled);
    const config = await loadClusterConfig(`${workspace}/constellation-conf.yaml`);
    // The release the programs are built and tested at (tools/kubernetes/k8s/go.mod).
    expect(config.kubernetesVersion).toBe((await import('@constellation/kubeadm')).DEFAULT_KUBERNETES_VERSION);
    expect(config.attestation.variant).toBe('tpm2-ek');
    expect(config.attestation.measurements.get(15)?.expected).toEqual(Buffer.alloc(32));
    expect(config.attestation.measurements.get(9)?.warnOnly).toBe(false);
    const again = await run('--workspace', workspace, 'config', 'generate');
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('exists; use --force to overwrite it');
    expect((await run('--workspace', workspace, 'config', 'generate', '--force')).code).toBe(0);
  }, 90_000);
});

describe('constellation help', () => {
  it('shows examples for every command', async () => {
    for (const command of [
      ['config', 'generate'],
      ['init'],
      ['verify'],
      ['status'],
      ['recover'],
      ['mini', 'up'],
      ['mini', 'down'],
      ['mini', 'reboot'],
    ]) {
      const result = await run(...command, '--help');
      expect(result.code, command.join(' ')).toBe(0);
      expect(result.stdout.toString(), command.join(' ')).toContain('Examples:');
    }
  }, 120_000);
});
