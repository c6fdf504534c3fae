import { errorMessage } from '@constellation/errors';
import { httpGetText } from '@constellation/http';
import type { HttpAnswer } from '@constellation/http';
import {
  arrayAt,
  choiceField,
  hostField,
  integerField,
  ipAddressField,
  nodeNameField,
  objectAt,
  stringField,
} from './json-shape.js';

export interface Instance {
  name: string;
  role: 'control-plane' | 'worker';
  ip: string;
}

export interface Endpoint {
  host: string;
  apiServerPort: number;
  joinServicePort: number;
  initPort: number;
}

const PORT = { min: 1, max: 65_535 };

/** Reads an answer's body into T, or throws naming the field that is not as expected. */
type Reader<T> = (body: unknown) => T;

function instanceAt(value: unknown, path: string): Instance {
  const object = objectAt(value, path);
  return {
    name: nodeNameField(object, 'name'),
    role: choiceField(object, 'role', ['control-plane', 'worker'] as const),
    ip: ipAddressField(object, 'ip'),
  };
}

const readInstance: Reader<Instance> = (body) => instanceAt(body, '');
const readPeers: Reader<Instance[]> = (body) => arrayAt(body, '', instanceAt);
const readRegistered: Reader<Instance & { ekPublicKeyHash: string }> = (body) => ({
  ...instanceAt(body, ''),
  ekPublicKeyHash: stringField(objectAt(body, ''), 'ekPublicKeyHash'),
});
const readEndpoint: Reader<Endpoint> = (body) => {
  const object = objectAt(body, '');
  return {
    host: hostField(object, 'host'),
    apiServerPort: integerField(object, 'apiServerPort', PORT),
    joinServicePort: integerField(object, 'joinServicePort', PORT),
    // 0 where the platform does not say.
    initPort: integerField(object, 'initPort', { min: 0, max: 65_535 }),
  };
};
const readInitSecretHash: Reader<string> = (body) => stringField(objectAt(body, ''), 'initSecretHash');

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
    return this.get('/self', readInstance);
  }

  peers(): Promise<Instance[]> {
    return this.get('/peers', readPeers);
  }

  endpoint(): Promise<Endpoint> {
    return this.get('/endpoint', readEndpoint);
  }

  /** The platform's record of the machine whose TPM has this EK, or undefined when it knows none. */
  async instanceByEndorsementKey(ekPublicKeyHash: string): Promise<Instance | undefined> {
    const found = await this.get(`/instances?ek=${encodeURIComponent(ekPublicKeyHash)}`, readRegistered, {
      notFound: true,
    });
    if (found !== undefined && found.ekPublicKeyHash !== ekPublicKeyHash)
      throw new Error(`instance metadata answered for another endorsement key than sha256:${ekPublicKeyHash}`);
    return found;
  }

  async initSecretHash(): Promise<string> {
    const initSecretHash = await this.get('/initsecrethash', readInitSecretHash);
    if (initSecretHash === '') throw new Error('instance metadata has an empty init-secret hash');
    return initSecretHash;
  }

  private get<T>(path: string, read: Reader<T>): Promise<T>;
  /** With `notFound`, an HTTP 404 is an answer (undefined), not an error. */
  private get<T>(path: string, read: Reader<T>, options: { notFound: true }): Promise<T | undefined>;
  private async get<T>(path: string, read: Reader<T>, options?: { notFound: true }): Promise<T | undefined> {
    const headers: Record<string, string> =
      this.nodeName === undefined ? {} : { 'x-constellation-node': this.nodeName };
    let response: HttpAnswer;
    try {
      response = await httpGetText(`${this.url}${path}`, { headers, timeoutMs: this.timeoutMs });
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
    try {
      return read(body);
    } catch (err) {
      throw new Error(`instance metadata ${path}: unexpected answer: ${errorMessage(err)}`, { cause: err });
    }
  }
}
