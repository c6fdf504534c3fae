import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import type { ManifestComponent } from './component-manifest.js';
import { withRetry } from './fetch-with-retry.js';
import type { RetryPolicy } from './fetch-with-retry.js';
import { httpGet, PermanentFetchError } from './http-get.js';
import { shownUrl } from './shown-url.js';

/**
 * Streams a component into `file` (an open temporary file), hashing while it streams and stopping
 * the transfer at the manifest's size, so memory stays flat and an endless body ends at once; a
 * Content-Length other than that size is refused before the body is read.
 * Each try starts the file over. Errors name the component and the cause; the actual digest is
 * never reported.
 */
export async function downloadComponent(
  component: ManifestComponent,
  file: FileHandle,
  retry: RetryPolicy,
): Promise<void> {
  const algorithm = component.hash.slice(0, component.hash.indexOf(':'));
  await withRetry(`component ${component.name} (${shownUrl(component.url)})`, retry, async (signal) => {
    await file.truncate(0);
    const response = await httpGet(component.url, { signal });
    // A length announced that is not the manifest's is another file: refused before the body is
    // read. Before, a mirror announcing more and then stalling was noticed only at the deadline
    // (issue 42).
    const announced = response.headers['content-length'];
    if (announced !== undefined && Number(announced) !== component.size) {
      response.destroy();
      throw new PermanentFetchError(
        `the server announces ${announced} bytes (Content-Length), the manifest's size is ${component.size}`,
      );
    }
    const hash = createHash(algorithm);
    let written = 0;
    for await (const chunk of response as AsyncIterable<Buffer>) {
      if (written + chunk.length > component.size) {
        response.destroy();
        throw new PermanentFetchError(`the download is larger than the manifest's size of ${component.size} bytes`);
      }
      hash.update(chunk);
      try {
        await writeAll(file, chunk, written);
      } catch (err) {
        response.destroy();
        throw new PermanentFetchError(`cannot be written: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, {
          cause: err,
        });
      }
      written += chunk.length;
    }
    if (written !== component.size)
      throw new PermanentFetchError(`the download has ${written} bytes, the manifest says ${component.size}`);
    if (`${algorithm}:${hash.digest('hex')}` !== component.hash)
      throw new PermanentFetchError(`the download does not match the manifest's digest`);
  });
}

/**
 * Writes all of `chunk` at `position`. write(2) may write less than asked without an error, on a
 * nearly full disk for one: the rest is written again, which then fails with ENOSPC. Taking one
 * write's word left a truncated component on disk whose digest was checked over the bytes
 * received, not written (red-team finding).
 */
async function writeAll(file: FileHandle, chunk: Buffer, position: number): Promise<void> {
  for (let offset = 0; offset < chunk.length;) {
    const { bytesWritten } = await file.write(chunk, offset, chunk.length - offset, position + offset);
    if (bytesWritten === 0) throw Object.assign(new Error('short write'), { code: 'ENOSPC' });
    offset += bytesWritten;
  }
}
