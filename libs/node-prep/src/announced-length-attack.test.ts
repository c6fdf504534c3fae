import { withTimeout } from '@constellation/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { signingKey, testNode } from './node-prep.fixture.js';
import type { SigningKey } from './node-prep.fixture.js';
import { prepareNode } from './node-preparation.js';

/*
 * Attack (issue 42, item 5): a mirror announces a component larger than the manifest's size
 * (Content-Length) and then sends nothing, or the right bytes and then nothing. The download waited
 * for the rest until its deadline (120 s by default, 15 minutes in the program) before anything
 * was refused. A Content-Length that differs from the manifest's size is now refused before a
 * byte of the body is read.
 */

let trusted: SigningKey;
beforeAll(async () => {
  trusted = await signingKey('release');
});

describe('a component whose announced length is not the manifest size', () => {
  it.each([
    ['sends nothing after the headers', false],
    ['sends the genuine bytes, then stalls', true],
  ])('is refused at once when the mirror announces more and %s', async (_what, sendBody) => {
    const node = await testNode(trusted);
    const announced = node.kubelet.length + 1_000_000;
    node.host.routes.set('/pkgs/kubelet', (_req, res) => {
      res.writeHead(200, { 'content-length': String(announced) });
      if (sendBody) res.write(node.kubelet);
      else res.flushHeaders();
      // and nothing more: the connection stays open until the test's server closes
    });
    const started = Date.now();
    // Ten seconds for the whole download (the fixture's deadline): a refusal must come far sooner.
    await expect(
      withTimeout(prepareNode(node.options), 20_000, 'a download announcing more than its size'),
    ).rejects.toThrow(
      `component kubelet (${node.host.url}/pkgs/kubelet): the server announces ${announced} bytes (Content-Length), the manifest's size is ${node.kubelet.length}`,
    );
    expect(Date.now() - started).toBeLessThan(3_000);
    // Refused, not retried: a mirror that announces another size sends another file.
    expect(node.host.requests.filter((path) => path === '/pkgs/kubelet')).toHaveLength(1);
    expect(await node.exists('run/state/bin/kubelet')).toBe(false);
    expect(await node.exists('etc/kubernetes/kubelet.env')).toBe(false);
  });

  it('is refused when the mirror announces less than the manifest size', async () => {
    const node = await testNode(trusted);
    node.host.routes.set('/pkgs/kubelet', (_req, res) => {
      res.writeHead(200, { 'content-length': '3' }).end(node.kubelet.subarray(0, 3));
    });
    await expect(prepareNode(node.options)).rejects.toThrow(
      `the server announces 3 bytes (Content-Length), the manifest's size is ${node.kubelet.length}`,
    );
  });
});
