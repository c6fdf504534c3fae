import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cryptsetupOutcome, runCryptsetup } from './cryptsetup.js';
import { lacksLuksMagic } from './luks-magic.js';

/**
 * How expensive the LUKS key-slot KDF is. Disk keys are 32 random bytes, so a cheap PBKDF loses
 * nothing against guessing; `default` keeps cryptsetup's argon2id (seconds and hundreds of MiB per
 * call), `fast` uses PBKDF2 with the minimum iterations for tests and `mini`.
 */
export type KdfCost = 'default' | 'fast';

export interface StateDiskOptions {
  /** Block device (production) or LUKS2 image file (tests, mini). */
  device: string;
  kdf?: KdfCost;
  cryptsetup?: string;
  timeoutMs?: number;
  /**
   * Where key files are made for each cryptsetup call (a private 0700 directory each, removed
   * after it): a tmpfs, such as the node's `/run/cryptsetup-keys.d`. The default, the system's
   * temporary directory, may be on a disk, where a deleted key's blocks stay for whoever holds
   * that disk's image (red-team finding).
   */
  keyDir?: string;
}

/** Our LUKS2 token: whether the disk belongs to a cluster already. */
const TOKEN_ID = '0';
const TOKEN_TYPE = 'constellation-state-disk';

/** The token's fields as read from the header (checked where they are used). */
interface Token {
  diskIsInitialized?: unknown;
  diskReceipt?: unknown;
  keyCheck?: unknown;
  nodeState?: unknown;
}

/** The token's fields as written. */
interface TokenFields {
  initialized: boolean;
  diskReceipt?: Uint8Array | undefined;
  keyCheck?: Buffer | undefined;
}

/**
 * What the token keeps to tell a wrong disk key from the right one without a cryptsetup run:
 * SHA-256 over a label and the key. Safe in the header because disk keys are 32-byte derived keys
 * (nothing to guess); a wrong key is refused for the price of a hash instead of the key slot's
 * memory-hard KDF, which anyone who knows the cluster's measurement secret could otherwise make a
 * recovering node run again and again (red-team finding). The slot stays the only proof of the
 * right key: a key that matches is still tested with cryptsetup.
 */
export function diskKeyCheck(key: Uint8Array): Buffer {
  return createHash('sha256').update('constellation/state-disk/key-check/v1\0').update(key).digest();
}

export class StateDiskError extends Error {
  override readonly name = 'StateDiskError';
}

/**
 * The node's LUKS2 state disk, driven through `cryptsetup`. Key material goes through files in a
 * private 0700 directory under `keyDir` that is removed right after each call, never through argv.
 */
export class StateDisk {
  readonly device: string;
  private readonly kdf: KdfCost;
  private readonly program: string;
  private readonly timeoutMs: number;
  private readonly keyDir: string;
  /** A format started by formatInBackground: the other operations wait for it. */
  private formatting: Promise<void> | undefined;

  constructor(options: StateDiskOptions) {
    this.device = options.device;
    this.kdf = options.kdf ?? 'default';
    this.program = options.cryptsetup ?? 'cryptsetup';
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.keyDir = options.keyDir ?? tmpdir();
  }

  /**
   * Whether the device holds a LUKS2 header. A device without any LUKS magic (a first boot's blank
   * disk) is answered from its bytes, without spawning cryptsetup.
   */
  async isLuks(): Promise<boolean> {
    await this.ready();
    if (lacksLuksMagic(this.device)) return false;
    const args = ['isLuks', '--type', 'luks2', this.device];
    const result = await runCryptsetup(this.program, args, this.timeoutMs);
    if (result.code === 0) return true;
    // Exit 1 is cryptsetup's "not LUKS2". Anything else (a missing device, a crash, a kill) says
    // nothing about the disk, and a node that took it for blank would format a member's disk.
    if (result.code === 1) return false;
    throw new StateDiskError(
      `could not tell whether the state disk is LUKS2 (${this.device}): ${cryptsetupOutcome(args, result)}`,
    );
  }

  /** Formats the device as LUKS2 with `passphrase` in key slot 0 and marks it not initialised. Destroys its content. */
  async format(passphrase: Buffer): Promise<void> {
    await this.withKeyFiles([passphrase], async ([keyFile]) => {
      await this.run(
        ['luksFormat', '--type', 'luks2', '--batch-mode', ...this.kdfArgs(), '--key-file', keyFile ?? '', this.device],
        'format the state disk',
      );
    });
    await this.writeToken({ initialized: false });
  }

  /**
   * Starts formatting the device (as `format`) and returns its promise at once; every other
   * operation on this disk waits for the format and fails with its error. What does not touch
   * the disk need not wait: the bootstrapper's InitServer listens while a first boot formats.
   */
  formatInBackground(passphrase: Buffer): Promise<void> {
    const formatting = this.format(passphrase);
    this.formatting = formatting;
    formatting.catch(() => undefined); // the operations that wait for it report its failure
    return formatting;
  }

  /** Resolves once no format started by formatInBackground is under way; rejects with its failure. */
  async ready(): Promise<void> {
    await this.formatting;
  }

  /** Lower-case LUKS UUID: the disk's identity, from which its key is derived. */
  async uuid(): Promise<string> {
    await this.ready();
    const result = await this.run(['luksUUID', this.device], 'read the state disk UUID');
    return result.stdout.trim().toLowerCase();
  }

  /** Replaces `current` with `next` in the key slot that `current` opens. */
  async changePassphrase(current: Buffer, next: Buffer): Promise<void> {
    await this.ready();
    await this.withKeyFiles([current, next], async ([oldFile, newFile]) => {
      await this.run(
        ['luksChangeKey', '--batch-mode', ...this.kdfArgs(), '--key-file', oldFile ?? '', this.device, newFile ?? ''],
        're-key the state disk',
      );
    });
  }

  /**
   * Whether `passphrase` opens a key slot (`cryptsetup open --test-passphrase`). Throws when
   * cryptsetup could not tell (out of memory for the KDF, killed): a wrong key is exit code 2.
   */
  async testPassphrase(passphrase: Buffer): Promise<boolean> {
    await this.ready();
    return this.withKeyFiles([passphrase], async ([keyFile]) => {
      const args = ['open', '--test-passphrase', '--key-file', keyFile ?? '', this.device];
      const result = await runCryptsetup(this.program, args, this.timeoutMs);
      if (result.code === 0) return true;
      if (result.code === 2) return false;
      throw new StateDiskError(
        `could not test a key on the state disk (${this.device}): ${cryptsetupOutcome(args, result)}`,
      );
    });
  }

  /** Whether the disk belongs to a cluster (token `diskIsInitialized`); false for a fresh or reset disk. */
  async isInitialized(): Promise<boolean> {
    return (await this.readToken())?.diskIsInitialized === true;
  }

  /**
   * The receipt of the join that gave the disk its key (token `diskReceipt`, base64), which a
   * rejoin shows; undefined if the token holds none (a disk set up by an earlier version).
   */
  async diskReceipt(): Promise<Buffer | undefined> {
    const receipt = (await this.readToken())?.diskReceipt;
    return typeof receipt === 'string' && receipt !== '' ? Buffer.from(receipt, 'base64') : undefined;
  }

  /**
   * The key check of the disk's key (diskKeyCheck, token `keyCheck`, base64); undefined if the
   * token holds none (a disk set up by an earlier version).
   */
  async keyCheck(): Promise<Buffer | undefined> {
    const check = (await this.readToken())?.keyCheck;
    if (typeof check !== 'string') return undefined;
    const bytes = Buffer.from(check, 'base64');
    return bytes.length === 32 ? bytes : undefined;
  }

  /**
   * Sets the token; `false` is how a node marks its disk for reset before rebooting, and drops the
   * receipt and key check. Neither is secret (the receipt opens nothing, the check is a hash of a
   * full-entropy key), so the header may hold them. `diskKey`: the key the disk now opens with.
   */
  async setInitialized(initialized: boolean, diskReceipt?: Uint8Array, diskKey?: Uint8Array): Promise<void> {
    await this.ready();
    await this.writeToken({
      initialized,
      diskReceipt: initialized ? diskReceipt : undefined,
      keyCheck: initialized && diskKey !== undefined ? diskKeyCheck(diskKey) : undefined,
    });
  }

  /**
   * What the node remembers about the cluster its disk belongs to (token `nodeState`: role, salt,
   * cluster ID, nothing secret), as stored; undefined if the token holds none. In the header, not
   * on the encrypted file system: a rebooted node needs it before it has the key that opens that.
   */
  async nodeState(): Promise<unknown> {
    return (await this.readToken())?.nodeState;
  }

  /** Keeps `state` in the token of an initialised disk (a reset drops it with the rest). */
  async setNodeState(state: Readonly<Record<string, string>>): Promise<void> {
    const token = await this.readToken();
    if (token?.diskIsInitialized !== true)
      throw new StateDiskError(`could not keep the node state (${this.device}): the disk is not initialised`);
    // The token as stored, with the node state beside its other fields.
    await this.importToken({ ...token, nodeState: state });
  }

  /**
   * Maps the disk with dm-crypt as /dev/mapper/`name` (opened by `passphrase`) and returns that
   * path; a mapping of this disk under that name already there (a restarted bootstrapper) is kept.
   */
  async open(name: string, passphrase: Buffer): Promise<string> {
    await this.ready();
    const mapped = `/dev/mapper/${name}`;
    const status = await runCryptsetup(this.program, ['status', name], this.timeoutMs);
    if (status.code === 0) {
      // An image file is mapped through a loop device: its `loop:` line names the file.
      const backing = (/^\s*loop:\s+(\S+)$/m.exec(status.stdout) ?? /^\s*device:\s+(\S+)$/m.exec(status.stdout))?.[1];
      if (backing !== undefined && (await sameFile(backing, this.device))) return mapped;
      throw new StateDiskError(
        `could not map the state disk (${this.device}) as ${mapped}: that name maps ${backing ?? 'another device'}`,
      );
    }
    await this.withKeyFiles([passphrase], async ([keyFile]) => {
      await this.run(['open', '--type', 'luks2', '--key-file', keyFile ?? '', this.device, name], 'map the state disk');
    });
    return mapped;
  }

  /**
   * Our token, or undefined when the disk has none (or is blank). Read from the header's JSON
   * (`luksDump --dump-json-metadata`), not with `token export`, whose exit code is the same for
   * "no such token" and for a failure: a failure counted as "not initialised" made a rebooting
   * member format its disk (red-team finding). Any failure to read throws.
   */
  private async readToken(): Promise<Token | undefined> {
    await this.ready();
    const args = ['luksDump', '--dump-json-metadata', this.device];
    const result = await runCryptsetup(this.program, args, this.timeoutMs);
    if (result.code !== 0) {
      // Only a device without any LUKS magic is certainly blank (isLuks decides for the rest).
      if (result.code === 1 && lacksLuksMagic(this.device)) return undefined;
      throw new StateDiskError(
        `could not read the state disk's token (${this.device}): ${cryptsetupOutcome(args, result)}`,
      );
    }
    let tokens: unknown;
    try {
      tokens = (JSON.parse(result.stdout) as { tokens?: unknown }).tokens;
    } catch {
      throw new StateDiskError(
        `could not read the state disk's token (${this.device}): its header JSON does not parse`,
      );
    }
    if (typeof tokens !== 'object' || tokens === null) return undefined;
    const token: unknown = (tokens as Record<string, unknown>)[TOKEN_ID];
    if (typeof token !== 'object' || token === null) return undefined;
    const ours = token as Token & { type?: unknown };
    return ours.type === TOKEN_TYPE ? ours : undefined;
  }

  private async writeToken({ initialized, diskReceipt, keyCheck }: TokenFields): Promise<void> {
    await this.importToken({
      type: TOKEN_TYPE,
      keyslots: [],
      diskIsInitialized: initialized,
      ...(diskReceipt === undefined ? {} : { diskReceipt: Buffer.from(diskReceipt).toString('base64') }),
      ...(keyCheck === undefined ? {} : { keyCheck: keyCheck.toString('base64') }),
    });
  }

  /** Replaces our token with `fields`, passed to cryptsetup through a private file as keys are. */
  private async importToken(fields: Record<string, unknown>): Promise<void> {
    const token = Buffer.from(JSON.stringify(fields));
    await this.withKeyFiles([token], async ([tokenFile]) => {
      await this.run(
        ['token', 'import', '--token-id', TOKEN_ID, '--token-replace', '--json-file', tokenFile ?? '', this.device],
        'write the state disk token',
      );
    });
  }

  private kdfArgs(): string[] {
    return this.kdf === 'fast' ? ['--pbkdf', 'pbkdf2', '--pbkdf-force-iterations', '1000'] : [];
  }

  private async run(args: string[], what: string): Promise<{ stdout: string }> {
    const result = await runCryptsetup(this.program, args, this.timeoutMs);
    if (result.code !== 0)
      throw new StateDiskError(`could not ${what} (${this.device}): ${cryptsetupOutcome(args, result)}`);
    return result;
  }

  private async withKeyFiles<T>(contents: Buffer[], use: (paths: string[]) => Promise<T>): Promise<T> {
    await mkdir(this.keyDir, { recursive: true, mode: 0o700 });
    const dir = await mkdtemp(join(this.keyDir, 'constellation-keys-'));
    try {
      const paths = await Promise.all(
        contents.map(async (content, i) => {
          const path = join(dir, `k${i}`);
          await writeFile(path, content, { mode: 0o600 });
          return path;
        }),
      );
      return await use(paths);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}

/** Whether two paths name the same file or device (a loop device's backing file counts as it). */
async function sameFile(a: string, b: string): Promise<boolean> {
  const [left, right] = await Promise.all([realpath(a).catch(() => a), realpath(b).catch(() => b)]);
  return left === right;
}
