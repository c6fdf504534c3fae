import { isAbsolute, normalize } from 'node:path';
import { z } from 'zod';

export const MANIFEST_KIND = 'constellation-component-manifest-v2';

/** The largest component a manifest may list (a kubelet is ~100 MiB). */
export const MAX_COMPONENT_BYTES = 1024 * 1024 * 1024;

const component = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'must be a lowercase name'),
  url: z
    .string()
    .max(2048)
    .refine((u) => URL.canParse(u) && ['http:', 'https:'].includes(new URL(u).protocol), 'must be an http(s) URL'),
  hash: z.string().regex(/^(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})$/, 'must be sha256:<64 hex> or sha512:<128 hex>'),
  size: z.number().int().min(0).max(MAX_COMPONENT_BYTES),
  installPath: z
    .string()
    .max(1024)
    .refine((p) => isAbsolute(p) && normalize(p) === p && !p.endsWith('/'), 'must be a normalised absolute file path'),
  mode: z.number().int().min(0).max(0o777).default(0o755),
});

const schema = z.strictObject({
  kind: z.literal(MANIFEST_KIND),
  /** Raised with every manifest the signer issues; a node refuses a lower one than it has seen. */
  serial: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  /** After this instant the manifest is refused: a mirror cannot freeze a node on old metadata. */
  expires: z.iso.datetime({ offset: true }),
  board: z.string().min(1).max(64),
  osVersion: z.string().min(1).max(64),
  kubernetesVersion: z
    .string()
    .regex(/^v\d+\.\d+\.\d+/, 'must look like v1.32.9')
    .max(64),
  components: z.array(component).min(1).max(64),
});

export type ManifestComponent = z.infer<typeof component>;
export type ComponentManifest = z.infer<typeof schema>;

/** Parses a (verified) manifest strictly; errors name the field. */
export function parseComponentManifest(bytes: Buffer, source: string): ComponentManifest {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new Error(`${source}: component manifest is not JSON`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join('.') ?? '';
    throw new Error(
      `${source}: component manifest ${field === '' ? '' : `field ${field}: `}${issue?.message ?? 'invalid'}`,
    );
  }
  const paths = new Set<string>();
  for (const c of parsed.data.components) {
    if (paths.has(c.installPath)) throw new Error(`${source}: two components install to ${c.installPath}`);
    paths.add(c.installPath);
  }
  return parsed.data;
}
