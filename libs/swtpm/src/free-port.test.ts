import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePortPair, isPortFree } from './free-port.js';

describe('free ports', () => {
  it('finds adjacent free ports and notices a taken one', async () => {
    const port = await freePortPair();
    expect(await isPortFree(port)).toBe(true);
    expect(await isPortFree(port + 1)).toBe(true);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    try {
      expect(await isPortFree(port)).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
