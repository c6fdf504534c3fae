import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { serveAttestationAgent } from '@constellation/atls';
import type { NodeContext } from './node-context.js';
import { readNodeState } from './node-state.js';

/**
 * On a control-plane node with a rooted issuer, serves the local attestation agent the JoinService
 * on this machine uses to prove its host to joining nodes. Other nodes serve nothing.
 */
export async function serveAgentOnControlPlane(context: NodeContext): Promise<{ close(): Promise<void> } | undefined> {
  if (context.issuer.rooted === undefined) return undefined;
  const state = await readNodeState(context.disk);
  if (state.role !== 'control-plane') return undefined;
  await mkdir(dirname(context.paths.attestationAgentSocket), { recursive: true, mode: 0o700 });
  return serveAttestationAgent(context.paths.attestationAgentSocket, context.issuer, context.logger);
}
