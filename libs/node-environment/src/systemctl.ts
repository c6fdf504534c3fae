import { connect } from 'node:net';
import { withUnixSocketPath } from '@constellation/files';
import type { UnitAnswer, UnitRequest } from './unit-runner.js';

/** Asks the node's unit runner; bounded, since a stop may wait for a unit's grace period. */
export function askUnitRunner(socket: string, request: UnitRequest, timeoutMs = 30_000): Promise<UnitAnswer> {
  return withUnixSocketPath(socket, (path) => ask(path, socket, request, timeoutMs));
}

function ask(path: string, socket: string, request: UnitRequest, timeoutMs: number): Promise<UnitAnswer> {
  return new Promise((resolve, reject) => {
    const connection = connect(path);
    let reply = '';
    const timer = setTimeout(() => {
      connection.destroy();
      reject(new Error(`the node's unit runner did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    connection.setEncoding('utf8');
    connection.on('connect', () => connection.write(`${JSON.stringify(request)}\n`));
    connection.on('data', (chunk: string) => (reply += chunk));
    connection.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`the node's unit runner is not running (${socket}): ${err.message}`));
    });
    connection.on('end', () => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(reply) as UnitAnswer);
      } catch {
        reject(new Error(`the node's unit runner answered "${reply.trim()}"`));
      }
    });
  });
}

const VERBS = new Set(['start', 'stop', 'restart', 'status', 'enable', 'is-enabled', 'is-active']);

/**
 * The node's `systemctl`: the verbs kubeadm and the bootstrapper use (daemon-reload, start, stop,
 * restart, enable, is-active, is-enabled, status), with systemctl's exit codes, answered by the
 * unit runner. Returns the exit code.
 */
export async function systemctl(socket: string, argv: readonly string[], out: (line: string) => void): Promise<number> {
  const words = argv.filter((arg) => !arg.startsWith('-'));
  const [verb, ...units] = words;
  if (verb === 'daemon-reload') return 0;
  if (verb === undefined || !VERBS.has(verb) || units.length === 0) {
    out(`systemctl on this node runs units for kubeadm and the bootstrapper; it does not do "${argv.join(' ')}"`);
    return 1;
  }
  let code = 0;
  for (const unit of units) {
    const asked = verb === 'is-active' ? 'status' : verb;
    const answer = await askUnitRunner(socket, { verb: asked as UnitRequest['verb'], unit });
    if (!answer.ok) {
      out(answer.message ?? `${verb} ${unit} failed`);
      code = verb === 'status' ? 4 : 1;
      continue;
    }
    if (verb === 'is-active') {
      out(answer.state ?? 'unknown');
      if (answer.state !== 'active') code = 3;
    } else if (verb === 'is-enabled') {
      out(answer.enabled === true ? 'enabled' : 'disabled');
      if (answer.enabled !== true) code = 1;
    } else if (verb === 'status') {
      const name = unit.endsWith('.service') ? unit : `${unit}.service`;
      out(`● ${name}`);
      out(`     Loaded: loaded (node unit runner; ${answer.enabled === true ? 'enabled' : 'disabled'})`);
      out(`     Active: ${answer.state ?? 'unknown'}${answer.message === undefined ? '' : ` (${answer.message})`}`);
      if (answer.state !== 'active') code = 3;
    } else if (answer.message !== undefined) {
      out(answer.message);
    }
  }
  return code;
}
