import { errorMessage } from '@constellation/errors';
import { httpGetText } from './http-get.js';
import type { HttpAnswer } from './http-get.js';
import * as z from 'zod/mini';
import { firstIssue } from './zod-mini.js';

const instance = z.object({
  name: z.string().check(z.minLength(1)),
  role: z.enum(['control-plane', 'worker']),
  ip: z.string().check(z.minLength(1)),
});
const registered = z.extend(instance, { ekPublicKeyHash: z.string() });
const endpoint = z.object({
  host: z.string().check(z.minLength(1)),
  apiServerPort: z.int(),
  joinServicePort: z.int(),
  initPort: z.int(),
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

  private get<T>(path: string, schema: z.ZodMiniType<T>): Promise<T>;
  /** With `notFound`, an HTTP 404 is an answer (undefined), not an error. */
  private get<T>(path: string, schema: z.ZodMiniType<T>, options: { notFound: true }): Promise<T | undefined>;
  private async get<T>(path: string, schema: z.ZodMiniType<T>, options?: { notFound: true }): Promise<T | undefined> {
    const headers: Record<string, string> =
      this.nodeName === undefined ? {} : { 'x-constellation-node': this.nodeName };
    let response: HttpAnswer;
    try {
      response = await httpGetText(`${this.url}${path}`, headers, this.timeoutMs);
    } catch (err) {
      throw new Error(`instance metadata ${path} unreachable at ${this.url}: ${errorMessage(err)}`, {
        cause: err,
      });
    }
    if (response.status === 404 && options?.notFound === true) return undefined;
    if (response.status < 200 || response.status > 299)
      throw new Error(`instance metadata ${path}: HTTP ${response.status}`);
    let body: unknown;
    try {
      body = JSON.parse(response.body);
    } catch {
      throw new Error(`instance metadata ${path}: the answer is not JSON`);
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) throw new Error(`instance metadata ${path}: unexpected answer: ${firstIssue(parsed.error)}`);
    return parsed.data;
  }
}
