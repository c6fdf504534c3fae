import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { httpGetText } from '@constellation/http';
import { z } from 'zod';

/** A machine as the platform registered it: what a ticket may grant comes from here, never from the node. */
export interface RegisteredInstance {
  name: string;
  role: 'control-plane' | 'worker';
  ips: string[];
  /** Lower-case hex SHA-256 of the EK's DER SubjectPublicKeyInfo. */
  ekPublicKeyHash: string;
}

/** Looks machines up by the hash of their TPM endorsement key. */
export interface InstanceRegistry {
  /** The registered instance, or undefined when the platform knows no machine with this EK. */
  byEndorsementKey(ekPublicKeyHash: string): Promise<RegisteredInstance | undefined>;
  readonly description: string;
}

const instanceSchema = z.object({
  name: z.string().min(1).max(253),
  role: z.enum(['control-plane', 'worker']),
  ip: z.string().min(1).max(64),
  ekPublicKeyHash: z.string().regex(/^[0-9a-f]{64}$/),
});

/** The most a registry answer may hold: one instance is a few hundred bytes. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * The instance registry of a cloud API, reached over HTTP: `GET <url>/instances?ek=<hash>`
 * (mini's metadata service answers it). Every join asks once, on a kept-alive connection. Calls
 * are bounded in time as a whole (a registry trickling bytes held a join slot for as long as it
 * liked: red-team finding) and in size; a registry that does not answer is an error (the caller
 * retries), never a silent "unknown".
 */
export class HttpInstanceRegistry implements InstanceRegistry {
  readonly description: string;
  private readonly url: string;
  private readonly timeoutMs: number;
  private readonly agent: HttpAgent;

  constructor(url: string, timeoutMs = 5_000) {
    this.url = url.replace(/\/$/, '');
    this.timeoutMs = timeoutMs;
    this.description = `instance registry ${this.url}`;
    const options = { keepAlive: true, maxSockets: 32 };
    this.agent = this.url.startsWith('https:') ? new HttpsAgent(options) : new HttpAgent(options);
  }

  async byEndorsementKey(ekPublicKeyHash: string): Promise<RegisteredInstance | undefined> {
    let response;
    try {
      response = await httpGetText(`${this.url}/instances?ek=${encodeURIComponent(ekPublicKeyHash)}`, {
        timeoutMs: this.timeoutMs,
        maxBytes: MAX_ANSWER_BYTES,
        agent: this.agent,
      });
    } catch (err) {
      throw new Error(`${this.description} did not answer: ${err instanceof Error ? err.message : String(err)}`, {
        cause: err,
      });
    }
    if (response.status === 404) return undefined;
    if (response.status < 200 || response.status > 299)
      throw new Error(`${this.description} answered HTTP ${response.status}`);
    let body: unknown;
    try {
      body = JSON.parse(response.body);
    } catch {
      throw new Error(`${this.description} sent an answer that is not JSON`);
    }
    const parsed = instanceSchema.safeParse(body);
    if (!parsed.success) throw new Error(`${this.description} sent a malformed instance: ${parsed.error.message}`);
    if (parsed.data.ekPublicKeyHash !== ekPublicKeyHash)
      throw new Error(`${this.description} answered for another endorsement key`);
    const { name, role, ip } = parsed.data;
    return { name, role, ips: [ip], ekPublicKeyHash };
  }
}
