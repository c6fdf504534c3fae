import { readFile, writeFile } from 'node:fs/promises';
import { MetadataServer } from '@constellation/sandbox';
import type { MetadataDocument } from '@constellation/sandbox';

/**
 * The hidden `mini serve-metadata` command: serves `documentFile` until SIGTERM and writes its
 * URL to `urlFile` once listening.
 */
export async function serveMetadata(
  documentFile: string,
  urlFile: string,
  host: string,
  artifactsDir?: string,
): Promise<void> {
  const document = JSON.parse(await readFile(documentFile, 'utf8')) as MetadataDocument;
  const server = await MetadataServer.start(document, 0, host, artifactsDir);
  await writeFile(urlFile, server.url.replace('127.0.0.1', host));
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await server.close();
}
