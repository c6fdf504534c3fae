import { Command, InvalidArgumentError, Option } from '@commander-js/extra-typings';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { parseInteger } from '@constellation/command-line';
import { CLI_DEFAULTS } from '../config.js';
import type { MiniUpResult } from '../mini/mini-up.js';
import { selfCommand } from '../self-command.js';
import { TAMPER_MODES } from '../mini/tamper.js';
import type { Tamper } from '../mini/tamper.js';
import { VM_TAMPER_MODES } from '../mini/providers/vm-tamper.js';
import type { VmTamper } from '../mini/providers/vm-tamper.js';
import { formatTable, outputOption, writeJson, writeResult } from './command-context.js';
import type { CommandContext } from './command-context.js';

/** `--tamper`'s comma-separated modes, each one of TAMPER_MODES. */
function parseTamperModes(value: string): Tamper[] {
  return value.split(',').map((mode) => {
    const known = TAMPER_MODES.find((m) => m === mode.trim());
    if (known === undefined)
      throw new InvalidArgumentError(`"${mode}" is not a tamper mode (expected ${TAMPER_MODES.join(', ')})`);
    return known;
  });
}

/** `--vm-tamper`'s comma-separated modes, each one of VM_TAMPER_MODES. */
function parseVmTamperModes(value: string): VmTamper[] {
  return value.split(',').map((mode) => {
    const known = VM_TAMPER_MODES.find((m) => m === mode.trim());
    if (known === undefined)
      throw new InvalidArgumentError(`"${mode}" is not a VM tamper mode (expected ${VM_TAMPER_MODES.join(', ')})`);
    return known;
  });
}

/** The node table `mini up` prints. */
function nodeTable(result: MiniUpResult): string {
  return formatTable([
    ['NODE', 'ROLE', 'ADDRESS', 'STATE', 'READY', 'ATTESTATION'],
    ...result.nodes.map((n) => [n.name, n.role, n.ip, n.state, n.ready ? 'True' : 'False', n.attestation]),
  ]).join('');
}

function miniUpCommand(context: CommandContext): CommandUnknownOpts {
  const { mini } = CLI_DEFAULTS;
  return new Command('up')
    .description('start nodes (each with its own swtpm, state disk and bootstrapper), init and join them')
    .addHelpText(
      'after',
      '\nThe control plane is the real one (etcd, kube-apiserver, kube-controller-manager, kube-scheduler), run\nfrom the programs `node tools/kubernetes/build.mjs` builds (`npm run mini` builds them): by default the newest\nrelease built in the cache, or the directory --kubernetes-bin-dir names.\n\nExamples:\n  constellation mini up\n  constellation mini up --workers 8\n  constellation mini up --tampered-workers 1   # see a modified node refused\n  constellation mini up --workers 1 --powered-off-workers 3   # then: constellation mini start worker-2 worker-3 worker-4\n  constellation mini up --workers 2 --tampered-workers 2 --tamper log-digest,log-removed   # a node whose event log lies\n  constellation mini up --workers 0 --vm-workers 1 --node-image IMAGE_DIR   # a worker that is a VM booting the node image\n  constellation mini up --kubernetes-bin-dir "$(node tools/kubernetes/build.mjs)"   # the release this checkout pins, built if missing\n\nVM workers boot the node image (npm run node-image) in QEMU with OVMF and their own swtpm;\n`npm run mini -- --vm-workers N` builds the image mini needs and passes --node-image for you.\n`constellation mini vendor` prints the image build options that make an image trust mini.\n',
    )
    .addOption(
      new Option(
        '--kubernetes-bin-dir <dir>',
        'the built Kubernetes programs (kube-apiserver, kubeadm, kubectl, ...): the directory `node tools/kubernetes/build.mjs` prints (default: the newest release built in ~/.cache/constellation/kubernetes)',
      ).env('CONSTELLATION_KUBERNETES_BIN_DIR'),
    )
    .option(
      '--control-planes <n>',
      'number of control-plane nodes',
      (v) => parseInteger(v, 1, mini.maxControlPlanes),
      mini.controlPlanes,
    )
    .option('--workers <n>', 'number of worker nodes', (v) => parseInteger(v, 0, mini.maxWorkers), mini.workers)
    .addOption(
      new Option(
        '--vm-workers <n>',
        'workers that are QEMU virtual machines booting the node image (software emulation: minutes each)',
      )
        .argParser((v) => parseInteger(v, 0, mini.maxWorkers))
        .default(0),
    )
    .addOption(
      new Option(
        '--vm-tamper <modes>',
        `VM workers, in order, that boot a modified UKI and must be refused, comma-separated: ${VM_TAMPER_MODES.join(', ')} (a word added to the kernel command line; a file added to the initrd; bytes appended to the kernel)`,
      ).argParser(parseVmTamperModes),
    )
    .addOption(
      new Option(
        '--node-image <dir>',
        'the node image the VM workers boot (a directory `npm run node-image` printed, built with the options `constellation mini vendor` prints)',
      ),
    )
    .addOption(
      new Option(
        '--powered-off-workers <n>',
        'more workers, made and registered but left powered off: `mini start` boots them (to watch joins happen)',
      )
        .argParser((v) => parseInteger(v, 0, mini.maxWorkers))
        .default(0),
    )
    .addOption(
      new Option('--tampered-workers <n>', 'workers whose bootstrapper bundle is modified (they must be refused)')
        .argParser((v) => parseInteger(v, 0, mini.maxWorkers))
        .default(0),
    )
    .addOption(
      new Option(
        '--tamper <modes>',
        `what each tampered worker's event log says, comma-separated in worker order, the last repeating (default bootstrapper): ${TAMPER_MODES.join(', ')} (the truth; the image's digest in place of the measured one; no event for the bootstrapper)`,
      ).argParser(parseTamperModes),
    )
    .addOption(outputOption())
    .action(async (options) => {
      const workspace = context.workspace();
      const { miniUp } = await import('../mini/mini-up.js');
      const result = await miniUp({
        workspace,
        controlPlanes: options.controlPlanes,
        workers: options.workers,
        poweredOffWorkers: options.poweredOffWorkers,
        tamperedWorkers: options.tamperedWorkers,
        ...(options.tamper === undefined ? {} : { tamper: options.tamper }),
        vmWorkers: options.vmWorkers,
        ...(options.vmTamper === undefined ? {} : { vmTamper: options.vmTamper }),
        ...(options.nodeImage === undefined ? {} : { nodeImage: options.nodeImage }),
        ...(options.kubernetesBinDir === undefined ? {} : { kubernetesBinDir: options.kubernetesBinDir }),
        print: context.print,
      });
      if (options.output === 'json') {
        writeJson(result);
        return;
      }
      writeResult(
        `${nodeTable(result)}\nkubeconfig: ${result.kubeconfig}\nkubectl: ${result.kubectl} --kubeconfig ${result.kubeconfig}\nstate: ${result.state}\nup in ${(result.elapsedMs / 1000).toFixed(1)} s; stop with: ${selfCommand(workspace, ['mini', 'down'])}\n`,
      );
    });
}

function miniVendorCommand(context: CommandContext): CommandUnknownOpts {
  return new Command('vendor')
    .description(
      "mini's stand-in TPM vendor and component publisher (created on first use): the image build options that make a node image trust them",
    )
    .addHelpText(
      'after',
      `
A VM worker's node image carries, in its verified root, the EK CA roots its TPM vendor signs with and
the key that signs the component manifests; mini keeps both here across clusters (private keys 0600).
--image-options prints one option or value per line, for scripts (npm run mini uses it).

Examples:
  constellation mini vendor
  npm run node-image -- --guest-agent $(constellation mini vendor --image-options)
`,
    )
    .option('--image-options', 'print only the image build options, one word per line', false)
    .action(async (options) => {
      const { openMiniVendor, imageTrustOptions } = await import('../mini/vendor.js');
      const { vmImageBuildCommand } = await import('../mini/vm-image.js');
      const vendor = await openMiniVendor();
      if (options.imageOptions) {
        writeResult(`${imageTrustOptions(vendor).join('\n')}\n`);
        return;
      }
      context.print(`mini's vendor: ${vendor.dir}`);
      writeResult(`${vmImageBuildCommand(vendor)}\n`);
    });
}

function miniDownCommand(context: CommandContext): CommandUnknownOpts {
  return new Command('down')
    .description('stop the local cluster and remove its processes and files')
    .addHelpText(
      'after',
      '\nExamples:\n  constellation mini down\n  constellation mini down --keep   # keep logs and disks for inspection\n',
    )
    .option('--keep', 'keep the files (state disks, logs) for inspection', false)
    .action(async (options) => {
      const { miniDown } = await import('../mini/mini-down.js');
      await miniDown(context.workspace(), options.keep, context.print);
    });
}

function miniRebootCommand(context: CommandContext): CommandUnknownOpts {
  return new Command('reboot')
    .description('reboot a node: TPM power cycle, measured boot, bootstrapper again (it rejoins)')
    .addHelpText(
      'after',
      '\nExamples:\n  constellation mini reboot worker-1\n  constellation mini reboot control-plane-0 --stop-joinservice   # then: constellation recover\n',
    )
    .argument('<node>', 'node name, for example worker-1')
    .option('--stop-joinservice', 'also stop the JoinService, as in a full control-plane shutdown', false)
    .action(async (node, options) => {
      const { miniReboot } = await import('../mini/mini-reboot.js');
      await miniReboot(context.workspace(), node, options.stopJoinservice, context.print);
    });
}

function miniStartCommand(context: CommandContext): CommandUnknownOpts {
  return new Command('start')
    .description(
      'power nodes on (made by up --powered-off-workers, or stopped): TPM reset, measured boot, bootstrapper (it joins, or rejoins)',
    )
    .addHelpText(
      'after',
      '\nIt returns once the nodes have booted; `constellation status` shows their joins.\n\nExamples:\n  constellation mini up --workers 1 --powered-off-workers 3\n  constellation mini start worker-2 worker-3 worker-4   # three joins at once\n  constellation mini start --all\n',
    )
    .argument('[nodes...]', 'node names, for example worker-2')
    .option('--all', 'every node that is off', false)
    .action(async (nodes, options) => {
      const { miniStart } = await import('../mini/mini-power.js');
      await miniStart(context.workspace(), { names: nodes, all: options.all }, context.print);
    });
}

function miniStopCommand(context: CommandContext): CommandUnknownOpts {
  return new Command('stop')
    .description('power nodes off: a clean shutdown, or with --power-loss every process killed at once')
    .addHelpText(
      'after',
      '\nStopping every control plane stops the JoinService too: started again, each control plane waits for\n`constellation recover`, as after a full shutdown of a real cluster.\n\nExamples:\n  constellation mini stop worker-1\n  constellation mini stop --all --power-loss   # then: constellation mini start --all, and recover\n',
    )
    .argument('[nodes...]', 'node names, for example worker-1')
    .option('--all', 'every node', false)
    .option('--power-loss', 'cut the power: no unit is asked to stop, every process is killed at once', false)
    .action(async (nodes, options) => {
      const { miniStop } = await import('../mini/mini-power.js');
      await miniStop(context.workspace(), { names: nodes, all: options.all }, options.powerLoss, context.print);
    });
}

/** Internal: a node's unit runner, which plays systemd's part on it (started in its namespaces). */
function miniNodeRunnerCommand(): CommandUnknownOpts {
  return new Command('node-runner').argument('<units-file>').action(async (unitsFile) => {
    const { runUnits } = await import('@constellation/node-environment');
    await runUnits(unitsFile);
  });
}

/** Internal: a node's `systemctl` (its PATH has a script that runs this), answered by its unit runner. */
function miniSystemctlCommand(): CommandUnknownOpts {
  return new Command('systemctl')
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('<socket>')
    .argument('[args...]')
    .action(async (socket, args) => {
      const { systemctl } = await import('@constellation/node-environment');
      process.exitCode = await systemctl(socket, args, (line) => {
        process.stdout.write(`${line}\n`);
      });
    });
}

/** Internal: the metadata service daemon that `mini up` starts detached. */
function miniServeMetadataCommand(): CommandUnknownOpts {
  return new Command('serve-metadata')
    .requiredOption('--document <file>')
    .requiredOption('--url-file <file>')
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--artifacts <dir>', 'also serve this directory under /artifacts/')
    .option('--api-load-balancer <spec>', 'also pass host:port through to the control planes (host:port=cp:port,…)')
    .action(async (options) => {
      const { serveMetadata } = await import('../mini/metadata-daemon.js');
      await serveMetadata(options.document, options.urlFile, options.host, options.artifacts, options.apiLoadBalancer);
    });
}

/** `constellation mini`: a whole attested cluster on this machine. */
export function miniCommand(context: CommandContext): CommandUnknownOpts {
  return new Command('mini')
    .description('run a whole attested cluster on this machine')
    .addCommand(miniUpCommand(context))
    .addCommand(miniDownCommand(context))
    .addCommand(miniRebootCommand(context))
    .addCommand(miniStartCommand(context))
    .addCommand(miniStopCommand(context))
    .addCommand(miniVendorCommand(context))
    .addCommand(miniServeMetadataCommand(), { hidden: true })
    .addCommand(miniNodeRunnerCommand(), { hidden: true })
    .addCommand(miniSystemctlCommand(), { hidden: true });
}
