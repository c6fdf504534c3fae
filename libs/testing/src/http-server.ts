import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface TestHttpServer {
  /** http://127.0.0.1:<port>, no trailing slash. */
  url: string;
  /** TCP connections accepted so far (to see whether clients keep connections alive). */
  readonly connections: () => number;
  /** Closes every connection and the server. */
  readonly close: () => Promise<void>;
}

/** A plain HTTP server on 127.0.0.1 and a free port, answering with `answer`. */
export async function startHttpServer(
  answer: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<TestHttpServer> {
  let connections = 0;
  const server = createServer(answer);
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => connections,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
