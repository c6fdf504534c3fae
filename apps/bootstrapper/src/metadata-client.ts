import { z } from 'zod';
import { errorMessage } from '@constellation/errors';

const instance = z.object({
  name: z.string().min(1),
  role: z.enum(['control-plane', 'worker']),
  ip: z.string().min(1),
});
const registered = instance.extend({ ekPublicKeyHash: z.string() });
const endpoint = z.object({
  host: z.string().min(1),
  apiServerPort: z.number().int(),
  joinServicePort: z.number().int(),
  initPort: z.number().int(),
});

export type Instance = z.infer<typeof instance>;
export type Endpoint = z.infer<typeof endpoint>;

/** Reads instance metadata (self, peers, control-plane endpoint, init-secret hash) with bounded calls. */
export class MetadataClient {
  private readonly url: string;
  private readonly nodeName: string | undefined;
  private readonly timeoutMs: number;

  constructor(url: string, nodeName?: string, timeoutMs = 10_000) {
    this.url = url.replace(/\/$/, '');
    this.nodeName = nodeName;
    this.timeoutMs = timeoutMs;
  }

  self(): Promise<Instance> {
    return this.get('/self', instance);
  }

  peers(): Promise<Instance[]> {
    return this.get('/peers', z.array(instance));
  }

  endpoint(): Promise<Endpoint> {
    return this.get('/endpoint', endpoint);
  }

  /** The platform's record of the machine whose TPM has this EK, or undefined when it knows none. */
  async instanceByEndorsementKey(ekPublicKeyHash: string): Promise<Instance | undefined> {
    const found = await this.get(`/instances?ek=${encodeURIComponent(ekPublicKeyHash)}`, registered, {
      notFound: true,
    });
    if (found !== undefined && found.ekPublicKeyHash !== ekPublicKeyHash)
      throw new Error(`instance metadata answered for another endorsement key than sha256:${ekPublicKeyHash}`);
    return found;
  }

  async initSecretHash(): Promise<string> {
    const { initSecretHash } = await this.get('/initsecrethash', z.object({ initSecretHash: z.string() }));
    if (initSecretHash === '') throw new Error('instance metadata has an empty init-secret hash');
    return initSecretHash;
  }

  private get<T>(path: string, schema: z.ZodType<T>): Promise<T>;
  /** With `notFound`, an HTTP 404 is an answer (undefined), not an error. */
  private get<T>(path: string, schema: z.ZodType<T>, options: { notFound: true }): Promise<T | undefined>;
  private async get<T>(path: string, schema: z.ZodType<T>, options?: { notFound: true }): Promise<T | undefined> {
    const headers: Record<string, string> =
      this.nodeName === undefined ? {} : { 'x-constellation-node': this.nodeName };
    let response: Response;
    try {
      response = await fetch(`${this.url}${path}`, { headers, signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      throw new Error(`instance metadata ${path} unreachable at ${this.url}: ${errorMessage(err)}`, {
        cause: err,
      });
    }
    if (response.status === 404 && options?.notFound === true) return undefined;
    if (!response.ok) throw new Error(`instance metadata ${path}: HTTP ${response.status}`);
    const parsed = schema.safeParse(await response.json());
    if (!parsed.success)
      throw new Error(`instance metadata ${path}: unexpected answer: ${parsed.error.issues[0]?.message ?? ''}`);
    return parsed.data;
  }
}
