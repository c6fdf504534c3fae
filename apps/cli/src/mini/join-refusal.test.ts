import { describe, expect, it } from 'vitest';
import { joinProblem } from './join-refusal.js';

const at = '2026-11-29T16:00:00.000Z';

describe("what an operator reads for a node that is not in the cluster's node list", () => {
  it('gives the refusal, or the failed join step, in the words the node recorded', () => {
    expect(
      joinProblem({
        state: 'refused',
        step: 'request-ticket',
        attempts: 3,
        message: 'attestation rejected: PCR 9',
        at,
      }),
    ).toBe('attestation rejected: PCR 9');
    expect(
      joinProblem({
        state: 'failed',
        step: 'kubeadm-join',
        attempts: 1,
        message: 'join step kubeadm-join failed: kubeadm join failed with exit code 1',
        at,
      }),
    ).toBe('join step kubeadm-join failed: kubeadm join failed with exit code 1');
  });

  it('names the step a join is at, and says when nothing was recorded', () => {
    expect(joinProblem({ state: 'joining', step: 'prepare-node', attempts: 2, at })).toBe(
      `joining: at join step prepare-node since ${at}`,
    );
    expect(joinProblem({ state: 'unreachable', step: 'request-ticket', attempts: 4, at })).toBe(
      'not joined yet (JoinService not reachable after 4 attempts)',
    );
    expect(joinProblem(undefined)).toBe('not joined yet');
  });
});
