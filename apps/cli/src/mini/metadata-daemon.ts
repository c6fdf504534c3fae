import { readFile, writeFile } from 'node:fs/promises';
import { MetadataServer } from '@constellation/instance-metadata';
import type { MetadataDocument } from '@constellation/instance-metadata';
import { parseLoadBalancerSpec, startApiLoadBalancer } from './api-load-balancer.js';

/**
 * The hidden `mini serve-metadata` command, the cloud's services: serves `documentFile` (and the
 * artifact host, and the control planes' load balancer) until SIGTERM and writes its URL to
 * `urlFile` once listening.
 */
export async function serveMetadata(
  documentFile: string,
  urlFile: string,
  host: string,
  artifactsDir?: string,
  apiLoadBalancer?: string,
): Promise<void> {
  const document = JSON.parse(await readFile(documentFile, 'utf8')) as MetadataDocument;
  // The load balancer first: the URL file says "ready" for everything this process serves.
  const spec = apiLoadBalancer === undefined ? undefined : parseLoadBalancerSpec(apiLoadBalancer);
  const balancer = spec === undefined ? undefined : await startApiLoadBalancer(spec.listen, spec.backends);
  const server = await MetadataServer.start(document, 0, host, artifactsDir);
  await writeFile(urlFile, server.url.replace('127.0.0.1', host));
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await server.close();
  balancer?.close();
}
