// A machine's bootstrap tokens across the period boundary, against the real API server with the
// JoinService's own ServiceAccount and RBAC (deploy/joinservice/rbac.yaml): a machine that asks in
// two consecutive periods must not end with two live tokens, whichever process minted them. The
// service's client goes through a relay that counts its requests and can throttle them as
// kube-apiserver does; what is stored is read from the API server as system:masters.
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { generateMasterSecret } from '@constellation/keys';
import type { MasterSecret } from '@constellation/keys';
import { bootstrapTokenSecret } from '@constellation/kubeadm';
import { createTempDir } from '@constellation/testing';
import type { ApiRelay, TempDir } from '@constellation/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiServerClock } from './api-server-clock.js';
import { NodeTokens } from './node-tokens.js';
import { refusalOf } from './refusal.fixture.js';
import { secretField, startJoinServiceCluster } from './join-service-cluster.fixture.js';
import type { JoinServiceCluster } from './join-service-cluster.fixture.js';
import { CLUSTER } from './join-service.fixture.js';

const TTL_MS = 15 * 60_000;
const MIN_REMAINING_MS = 5 * 60_000;
const PERIOD_MS = TTL_MS - MIN_REMAINING_MS;

let dir: TempDir;
let cluster: JoinServiceCluster;
let relay: ApiRelay;
let core: k8s.CoreV1Api;
let masterSecret: MasterSecret;

beforeAll(async () => {
  dir = await createTempDir('constellation-node-tokens-');
  cluster = await startJoinServiceCluster(join(dir.path, 'control-plane'), { cluster: CLUSTER });
  relay = await cluster.startRelay();
  const kubeconfigPath = join(dir.path, 'kubeconfig');
  await cluster.writeJoinServiceKubeconfig(kubeconfigPath, relay.url);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  core = kc.makeApiClient(k8s.CoreV1Api);
  masterSecret = generateMasterSecret();
});

afterAll(async () => {
  await relay.close();
  await cluster.stop();
  await dir.remove();
});

function tokens(): NodeTokens {
  return new NodeTokens({
    core,
    masterSecret,
    ttlMs: TTL_MS,
    minRemainingMs: MIN_REMAINING_MS,
    retryAfterMs: 1_000,
    clock: new ApiServerClock({ maxSkewMs: 5_000, retryAfterMs: 1_000 }),
  });
}

/** The JoinService's bootstrap token Secrets as the API server holds them: token id and expiry. */
async function storedTokens(): Promise<{ id: string; expires: number }[]> {
  const { items } = await cluster.core.listNamespacedSecret({
    namespace: 'kube-system',
    labelSelector: 'constellation.dev/minted-by=joinservice',
  });
  return items.map((secret) => ({
    id: secretField(secret, 'token-id'),
    expires: new Date(secretField(secret, 'expiration')).getTime(),
  }));
}

/** Token ids whose Secret exists and has not expired at `now`. */
async function liveTokenIds(now: number): Promise<string[]> {
  return (await storedTokens())
    .filter((token) => token.expires > now)
    .map((token) => token.id)
    .sort();
}

/** Whether a Secret holds token `id`, expired or not. */
async function hasSecret(id: string): Promise<boolean> {
  return (await storedTokens()).some((token) => token.id === id);
}

/** A moment `offsetMs` into a period far in the future, so no Secret of another test is live then. */
let nextPeriod = Math.floor(Date.now() / PERIOD_MS) + 1_000;
function periodStart(): number {
  nextPeriod += 10;
  return nextPeriod * PERIOD_MS;
}

describe('NodeTokens across a period boundary', () => {
  beforeEach(() => {
    relay.requests.length = 0;
  });

  it('revokes the previous period’s token when a machine asks again while it still lives: one live token', async () => {
    const start = periodStart();
    const service = tokens();
    const first = await service.tokenFor('machine-a', 'node-a', start + PERIOD_MS - 1_000);
    const askedAgainAt = start + PERIOD_MS + 1_000; // the first token has 5 min left: still live
    expect(first.token.expires.getTime()).toBeGreaterThan(askedAgainAt);
    const second = await service.tokenFor('machine-a', 'node-a', askedAgainAt);
    expect(second.token.id).not.toBe(first.token.id);
    expect(await liveTokenIds(askedAgainAt)).toEqual([second.token.id]);
  });

  it('revokes it also when another process minted the new token and died before revoking the old one', async () => {
    const start = periodStart();
    const first = await tokens().tokenFor('machine-b', 'node-b', start + 60_000);
    const askedAgainAt = start + PERIOD_MS + 30_000;
    // The killed process created the new period's Secret, then died: both tokens live.
    const minted = tokens().derive('machine-b', askedAgainAt);
    await core.createNamespacedSecret({ namespace: 'kube-system', body: bootstrapTokenSecret(minted, 'node-b') });
    expect(await liveTokenIds(askedAgainAt)).toEqual([first.token.id, minted.id].sort());

    const restarted = await tokens().tokenFor('machine-b', 'node-b', askedAgainAt);
    expect(restarted).toMatchObject({ reused: true, token: { id: minted.id } });
    expect(await liveTokenIds(askedAgainAt)).toEqual([minted.id]);
  });

  it('sends no delete once the previous period’s token has expired by itself', async () => {
    const start = periodStart();
    const askedAt = start + MIN_REMAINING_MS + 1_000;
    const { token } = await tokens().tokenFor('machine-c', 'node-c', askedAt);
    expect(await liveTokenIds(askedAt)).toEqual([token.id]);
    expect(relay.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
  });

  it('hands nothing out while the old token cannot be revoked, and revokes it on the next ask', async () => {
    const start = periodStart();
    const service = tokens();
    const first = await service.tokenFor('machine-e', 'node-e', start + PERIOD_MS - 1_000);
    const askedAgainAt = start + PERIOD_MS + 1_000;
    // The API server sheds the delete (over its in-flight limit) and serves the create.
    relay.throttle((request) => request.method === 'DELETE');
    const refused = await refusalOf(service.tokenFor('machine-e', 'node-e', askedAgainAt)).finally(() => {
      relay.throttle(undefined);
    });
    expect(refused).toMatchObject({ kind: 'unavailable', reason: 'api-unavailable', retryAfterMs: 1_000 });
    // One line naming the status and the API server's words, not the client's header dump.
    expect(refused.message).toBe(
      "could not revoke the node's token of the previous period in the cluster: HTTP 429: Too many requests, please try again later.",
    );
    const next = tokens().derive('machine-e', askedAgainAt);
    expect(await liveTokenIds(askedAgainAt)).toEqual([first.token.id, next.id].sort()); // created, not handed out

    const retried = await service.tokenFor('machine-e', 'node-e', askedAgainAt + 1_000);
    expect(retried).toMatchObject({ reused: true, token: { id: next.id } });
    expect(await liveTokenIds(askedAgainAt)).toEqual([next.id]);
  });

  it('hands the same token to a repeat ask within a period without a second write', async () => {
    const start = periodStart();
    const service = tokens();
    const first = await service.tokenFor('machine-d', 'node-d', start + 1_000);
    const writes = relay.requests.length;
    const again = await service.tokenFor('machine-d', 'node-d', start + 2_000);
    expect(again).toEqual({ token: first.token, reused: true });
    expect(relay.requests.length).toBe(writes);
  });
});

// A replica whose clock disagrees with the API server's derives another period's token than its
// peers: lagging, it re-creates a token a peer revoked at the boundary (the node then holds two
// live ones); leading, it revokes the token a peer handed out a moment ago. The API server's Date
// header is the clock every replica can check against. These replicas use one-day periods with
// a one-day overlap, so the tokens involved live now whatever the time of day the test runs at.
describe('NodeTokens on a replica whose clock disagrees with the API server', () => {
  const LONG_TTL_MS = 2 * 24 * 3_600_000;
  const LONG_MIN_REMAINING_MS = 24 * 3_600_000;
  const LONG_PERIOD_MS = LONG_TTL_MS - LONG_MIN_REMAINING_MS;

  function replica(offsetMs: number): NodeTokens {
    return new NodeTokens({
      core,
      masterSecret,
      ttlMs: LONG_TTL_MS,
      minRemainingMs: LONG_MIN_REMAINING_MS,
      retryAfterMs: 1_000,
      clock: new ApiServerClock({ maxSkewMs: 5_000, retryAfterMs: 1_000, now: () => Date.now() + offsetMs }),
    });
  }

  /** Milliseconds since the current long period started, by the real (and the API server's) clock. */
  function intoPeriod(): number {
    return Date.now() % LONG_PERIOD_MS;
  }

  it('refuses on a lagging replica instead of re-creating the token a peer revoked, and takes back what it created', async () => {
    const current = await replica(0).tokenFor('machine-lag', 'node-lag');
    // One second before the current period began: the previous period by this replica's clock.
    const lagging = replica(-(intoPeriod() + 1_000));
    const stale = lagging.derive('machine-lag');
    expect(stale.id).not.toBe(current.token.id);

    const refused = await refusalOf(lagging.tokenFor('machine-lag', 'node-lag'));
    expect(refused).toMatchObject({ kind: 'unavailable', reason: 'clock-skew', retryAfterMs: 1_000 });
    expect(refused.message).toMatch(
      /^this JoinService's clock is at least \d+ s behind the Kubernetes API server's \(allowed: 5 s\): it would disagree with its peers about when tokens and the control-plane join lease expire; fix the machine's time synchronisation$/,
    );
    expect(await hasSecret(stale.id)).toBe(false);
    expect(await hasSecret(current.token.id)).toBe(true);
  });

  it('refuses on a leading replica before revoking the token a peer handed out', async () => {
    const current = await replica(0).tokenFor('machine-lead', 'node-lead');
    // One second into the next period by this replica's clock: the current token is its "previous".
    const leading = replica(LONG_PERIOD_MS - intoPeriod() + 1_000);
    const early = leading.derive('machine-lead');

    const refused = await refusalOf(leading.tokenFor('machine-lead', 'node-lead'));
    expect(refused).toMatchObject({ kind: 'unavailable', reason: 'clock-skew' });
    expect(refused.message).toMatch(/^this JoinService's clock is at least \d+ s ahead of the Kubernetes API server's/);
    expect(await hasSecret(current.token.id)).toBe(true);
    expect(await hasSecret(early.id)).toBe(false);
  });

  it('hands out tokens when the clocks differ by less than the allowance', async () => {
    const { token } = await replica(-3_000).tokenFor('machine-close', 'node-close');
    expect(await hasSecret(token.id)).toBe(true);
  });
});
