// What a join storm's driver tells its node processes, and what they report back (storm-nodes.ts).

export interface StormOrders {
  identitiesPath: string;
  /** Which identities of the file this process runs: [first, end). */
  first: number;
  end: number;
  /** host:port of the JoinService. */
  address: string;
  /** Nodes of this process with a call in flight at once (0: all of them). */
  concurrency: number;
  /** Date.now() at which every process starts its nodes: the driver's go (on stdin) sets it. */
  startAtMs: number;
  /** A node still without a ticket this long after the start gives up (after one last attempt then). */
  giveUpAfterMs: number;
  /** startAtMs + giveUpAfterMs. */
  giveUpAtMs: number;
  requestTimeoutMs: number;
  /** The bootstrapper's join backoff: exponential with full jitter, or what the service asked. */
  initialBackoffMs: number;
  maxBackoffMs: number;
}

export interface NodeOutcome {
  name: string;
  joined: boolean;
  attempts: number;
  /** The successful call's duration, ms. */
  callMs?: number;
  /** From the storm's start to the ticket, ms (retries and waits included). */
  joinedAfterMs?: number;
  /** The node its ticket's kubelet client certificate names (system:node:<name>). */
  certificateNode?: string;
  /** Failed attempts by gRPC status name. */
  failures: Record<string, number>;
  lastError?: string;
}

/** A node process's last line: the CPU it used from the go to its last node's outcome. */
export interface NodeProcessCpu {
  cpuMs: number;
}

/** The address node `index` of a storm is registered with (and puts in its serving CSR). */
export function stormNodeIp(index: number): string {
  const n = index + 1;
  return `10.${44 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;
}
