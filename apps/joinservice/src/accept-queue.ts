import { readFile } from 'node:fs/promises';

/** A listening socket's state in /proc/net/tcp (TCP_LISTEN). */
const LISTEN = '0A';

/**
 * Connections waiting in the kernel's accept queue of the TCP sockets listening on `port` (its
 * `rx_queue` in /proc/net/tcp and tcp6, which for a listening socket counts connections not yet
 * accepted); undefined where the kernel does not say (not Linux). Node 20 accepts one connection
 * per event-loop turn, so in a storm nodes wait here, unseen by the service's own bounds
 * (docs/joinservice.md, "Connections waiting to be accepted").
 */
export async function acceptQueueLength(port: number): Promise<number | undefined> {
  const tables = await Promise.all(
    ['/proc/net/tcp', '/proc/net/tcp6'].map((path) => readFile(path, 'latin1').catch(() => undefined)),
  );
  if (tables.every((table) => table === undefined)) return undefined;
  const wanted = port.toString(16).toUpperCase().padStart(4, '0');
  let waiting = 0;
  for (const table of tables) {
    for (const line of (table ?? '').split('\n').slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue ...
      const [, local, , state, queues] = line.trim().split(/\s+/);
      if (state !== LISTEN || local?.split(':').at(-1) !== wanted) continue;
      waiting += parseInt(queues?.split(':')[1] ?? '0', 16) || 0;
    }
  }
  return waiting;
}
