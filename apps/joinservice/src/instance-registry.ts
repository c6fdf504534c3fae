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

/**
 * The instance registry of a cloud API, reached over HTTP: `GET <url>/instances?ek=<hash>`
 * (mini's metadata service answers it). Calls are bounded; a registry that does not answer is an
 * error (the caller retries), never a silent "unknown".
 */
export class HttpInstanceRegistry implements InstanceRegistry {
  readonly description: string;
  private readonly url: string;
  private readonly timeoutMs: number;

  constructor(url: string, timeoutMs = 5_000) {
    this.url = url.replace(/\/$/, '');
    this.timeoutMs = timeoutMs;
    this.description = `instance registry ${this.url}`;
  }

  async byEndorsementKey(ekPublicKeyHash: string): Promise<RegisteredInstance | undefined> {
    const response = await fetch(`${this.url}/instances?ek=${encodeURIComponent(ekPublicKeyHash)}`, {
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    if (response.status === 404) return undefined;
    if (!response.ok) throw new Error(`${this.description} answered HTTP ${response.status}`);
    const body = await response.json();
    const parsed = instanceSchema.safeParse(body);
    if (!parsed.success) throw new Error(`${this.description} sent a malformed instance: ${parsed.error.message}`);
    if (parsed.data.ekPublicKeyHash !== ekPublicKeyHash)
      throw new Error(`${this.description} answered for another endorsement key`);
    const { name, role, ip } = parsed.data;
    return { name, role, ips: [ip], ekPublicKeyHash };
  }
}
