import { cp, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot, runCommand, tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';

const root = repoRoot(import.meta.dirname);
const check = join(root, 'tools/dev/check-generated.sh');

/** A copy of just what code generation reads and writes, so the test can edit it freely. */
async function copyProtoTree(): Promise<string> {
  const dir = await tempDirForTest();
  await cp(join(root, 'proto'), join(dir, 'proto'), { recursive: true });
  await cp(join(root, 'buf.yaml'), join(dir, 'buf.yaml'));
  await mkdir(join(dir, 'libs/proto/src'), { recursive: true });
  await cp(join(root, 'libs/proto/buf.gen.yaml'), join(dir, 'libs/proto/buf.gen.yaml'));
  await cp(join(root, 'libs/proto/src/gen'), join(dir, 'libs/proto/src/gen'), { recursive: true });
  await symlink(join(root, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

describe('generated-code freshness check (CI step)', () => {
  it('passes when the committed code matches the .proto files', async () => {
    const dir = await copyProtoTree();
    const result = await runCommand('bash', [check, dir], { timeoutMs: 60_000 });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('fails and shows the difference when a .proto was edited without regenerating', async () => {
    const dir = await copyProtoTree();
    const file = join(dir, 'proto/constellation/recovery/v1/recovery.proto');
    const source = await readFile(file, 'utf8');
    await writeFile(
      file,
      source.replace(
        '  string cluster_id_hex = 2;\n',
        '  string cluster_id_hex = 2;\n  // Added without regenerating.\n  string note = 3;\n',
      ),
    );
    const result = await runCommand('bash', [check, dir], { timeoutMs: 60_000 });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('libs/proto/src/gen is stale');
    expect(result.stdout.toString()).toContain('recovery.ts');
  });
});
