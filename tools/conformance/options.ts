// The conformance runner's command line (`npm run conformance -- …`): options → defaults → Options.
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPOSITORY_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** What each mode runs: quick, the specs that may run side by side and are not slow; certified, all. */
export const MODES = {
  quick: { labelFilter: 'Conformance && !Serial && !Disruptive && !Slow', timeout: '3h' },
  // Ginkgo runs the specs the suite marks Serial one at a time after the others (the e2e framework
  // decorates them with ginkgo.Serial), as Sonobuoy's certified-conformance mode does.
  certified: { labelFilter: 'Conformance', timeout: '6h' },
} as const;
export type Mode = keyof typeof MODES;
const DEFAULT_PROCS = 4;
const DEFAULT_SKIP_LIST = join(REPOSITORY_ROOT, 'tools', 'conformance', 'skip-list.yaml');

export interface Options {
  mode: Mode;
  labelFilter: string;
  focus: string[];
  skip: string[];
  /** undefined: --no-skip-list. */
  skipList: string | undefined;
  procs: number;
  /** ginkgo's duration syntax (90m, 2h30m). */
  timeout: string;
  reportDir: string | undefined;
  workspace: string;
  /** Bring mini up (in the repository's workspace) when none runs; --no-up turns it off. */
  up: boolean;
  importImages: boolean;
  dryRun: boolean;
  /** What follows `--`, for e2e.test. */
  e2eArgs: string[];
}

/** A command line the runner cannot use (exit code 2). */
export class UsageError extends Error {}

const DESCRIPTION = `Runs the upstream Kubernetes conformance suite (k8s.io/kubernetes/test/e2e, the release mini runs) against the running mini cluster, with --provider=skeleton. The suite and its test images are built first when missing (node tools/kubernetes/conformance-build.mjs: about 5 min the first time after the Kubernetes programs, nothing later); the images are imported into every node, and served to the nodes for the run by a read-only registry on mini's host address (their mirror of registry.k8s.io: nothing is pulled from outside). Needs root, like mini.`;

const AFTER = `
Flags after -- go to e2e.test (for example --system-pods-startup-timeout=2m).
Exit code: 0 when every spec that ran passed, 1 otherwise, 2 for a bad command line.

Examples:
  npm run conformance
  npm run conformance -- --mode certified
  npm run conformance -- --focus 'EmptyDir volumes' --procs 2
  npm run conformance -- --dry-run`;

const collect = (value: string, previous: string[]): string[] => [...previous, value];

function parseProcs(text: string): number {
  const procs = Number(text);
  if (!Number.isInteger(procs) || procs < 1 || procs > 32) {
    throw new InvalidArgumentError(`Expected a whole number from 1 to 32, got ${text}`);
  }
  return procs;
}

function parseTimeout(text: string): string {
  if (text === '' || !/^(\d+h)?(\d+m)?(\d+s)?$/.test(text)) {
    throw new InvalidArgumentError(`Expected a duration like 90m or 2h30m, got ${text}`);
  }
  return text;
}

function program(): Command {
  return new Command('npm run conformance --')
    .description(DESCRIPTION)
    .usage('[options] [-- e2e.test flags]')
    .addOption(
      new Option(
        '--mode <mode>',
        'quick: the Conformance specs that run side by side and are not Slow; certified: every Conformance ' +
          'spec, the Serial and Disruptive ones one at a time after the others (what a certification submits)',
      )
        .choices(Object.keys(MODES))
        .default('quick'),
    )
    .addOption(
      new Option(
        '--label-filter <expr>',
        'which specs (ginkgo label filter), in place of the mode’s; add Slow ones with ' +
          "'Conformance && !Serial && !Disruptive'",
      ).default(MODES.quick.labelFilter, "the mode's"),
    )
    .addOption(
      new Option('--focus <regex>', 'only specs whose full name matches (repeatable)')
        .argParser(collect)
        .default([] as string[]),
    )
    .addOption(
      new Option('--skip <regex>', 'also skip specs whose full name matches (repeatable)')
        .argParser(collect)
        .default([] as string[]),
    )
    .addOption(
      new Option('--skip-list <file>', 'specs skipped by name, with reasons').default(
        DEFAULT_SKIP_LIST,
        'tools/conformance/skip-list.yaml',
      ),
    )
    .addOption(new Option('--no-skip-list', 'run the skip list’s specs too'))
    .addOption(
      new Option('--procs <n>', 'parallel ginkgo processes (the specs mostly wait)')
        .argParser(parseProcs)
        .default(DEFAULT_PROCS),
    )
    .addOption(
      new Option('--timeout <duration>', 'bound of the whole run, as ginkgo takes it')
        .argParser(parseTimeout)
        .default(MODES.quick.timeout, `${MODES.quick.timeout}; ${MODES.certified.timeout} in certified mode`),
    )
    .addOption(
      new Option(
        '--report-dir <dir>',
        'where the JUnit and JSON reports and the full log go (default constellation-conformance/<time> in the workspace)',
      ),
    )
    .addOption(
      new Option('--workspace <dir>', 'the mini cluster’s workspace').default(REPOSITORY_ROOT, 'the repository'),
    )
    .addOption(new Option('--no-up', 'fail when no mini cluster runs, instead of bringing one up (npm run mini)'))
    .addOption(new Option('--no-import', 'do not import the test images (they are already on the nodes)'))
    .addOption(new Option('--dry-run', 'list the specs that would run, run nothing'))
    .addHelpText('after', AFTER);
}

/** The options of `argv` (without node and the script), or 'help' once help has been printed. */
export function parseOptions(argv: readonly string[]): Options | 'help' {
  const separator = argv.indexOf('--');
  const own = separator === -1 ? [...argv] : argv.slice(0, separator);
  const e2eArgs = separator === -1 ? [] : argv.slice(separator + 1);
  const command = program()
    .exitOverride()
    .configureOutput({
      writeOut: (text) => process.stdout.write(text),
      // Errors are the caller's to print (as `error: …`, exit code 2); help goes to stdout.
      writeErr: () => undefined,
      outputError: () => undefined,
    });
  try {
    command.parse(own, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.help') return 'help';
      throw new UsageError(`${error.message.replace(/^error: /, '')} (see --help)`);
    }
    throw error;
  }
  const raw = command.opts<{
    mode: Mode;
    labelFilter: string;
    focus?: string[];
    skip?: string[];
    skipList: string | false;
    procs: number;
    timeout: string;
    reportDir?: string;
    workspace: string;
    up: boolean;
    import: boolean;
    dryRun?: boolean;
  }>();
  const mode = MODES[raw.mode];
  const given = (name: string): boolean => command.getOptionValueSource(name) === 'cli';
  if (raw.mode === 'certified' && given('labelFilter')) {
    throw new UsageError(
      '--label-filter and --mode certified: the certified mode runs every Conformance spec; narrow it with --focus or --skip, or drop --mode (see --help)',
    );
  }
  return {
    mode: raw.mode,
    labelFilter: given('labelFilter') ? raw.labelFilter : mode.labelFilter,
    focus: raw.focus ?? [],
    skip: raw.skip ?? [],
    skipList: raw.skipList === false ? undefined : resolve(raw.skipList),
    procs: raw.procs,
    timeout: given('timeout') ? raw.timeout : mode.timeout,
    reportDir: raw.reportDir === undefined ? undefined : resolve(raw.reportDir),
    workspace: resolve(raw.workspace),
    up: raw.up,
    importImages: raw.import,
    dryRun: raw.dryRun === true,
    e2eArgs,
  };
}
