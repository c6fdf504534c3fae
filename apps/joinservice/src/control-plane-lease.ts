import type { CoordinationV1Api, CoreV1Api, V1Lease } from '@kubernetes/client-node';
import { V1MicroTime } from '@kubernetes/client-node';
import { Refusal } from '@constellation/errors';
import { apiErrorMessage, apiStatusCode } from '@constellation/kubeadm';
import type { ApiServerClock } from './api-server-clock.js';

export interface ControlPlaneLeaseOptions {
  coordination: CoordinationV1Api;
  core: CoreV1Api;
  /** How long one control-plane join may hold the lease before others may take it. */
  holdMs: number;
  /** This machine's clock, checked against the API server's before the lease is judged or written. */
  clock: ApiServerClock;
  namespace?: string;
  name?: string;
}

/**
 * Serialises control-plane joins (etcd grows one member at a time) with a
 * coordination.k8s.io Lease. The lease is free when it does not exist, when its holder has
 * registered as a Node (its join finished), or when it expired; otherwise the caller gets a
 * retryable UNAVAILABLE with a `retry-after-ms` hint. Conflicting writes are resolved by the API
 * server's resourceVersion check, so two JoinService replicas cannot both win. Expiry is judged,
 * and renewTime written, by this machine's clock: a replica whose clock is off the API server's
 * (the Date header of the answer it acts on) refuses, and gives back a lease it just created.
 */
export class ControlPlaneLease {
  private readonly options: Required<ControlPlaneLeaseOptions>;

  constructor(options: ControlPlaneLeaseOptions) {
    this.options = { namespace: 'kube-system', name: 'constellation-control-plane-join', ...options };
  }

  async acquire(nodeName: string, now = new Date(this.options.clock.now())): Promise<void> {
    const { coordination, clock, namespace, name } = this.options;
    const createdAt = clock.now();
    const created = await coordination
      .createNamespacedLeaseWithHttpInfo({ namespace, body: this.lease(nodeName, now) })
      .catch((err: unknown) => {
        if (apiStatusCode(err) === 409) return undefined;
        throw err;
      });
    if (created !== undefined) {
      const skew = clock.skew(created.headers, createdAt);
      if (skew !== undefined) throw clock.refusal(skew, await this.giveBack(nodeName));
      return;
    }
    const readAt = clock.now();
    const read = await coordination.readNamespacedLeaseWithHttpInfo({ namespace, name });
    const skew = clock.skew(read.headers, readAt);
    if (skew !== undefined) throw clock.refusal(skew);
    const current = read.data;
    const holder = current.spec?.holderIdentity ?? '';
    const renewed = current.spec?.renewTime ?? current.spec?.acquireTime;
    const expiresAt =
      (renewed === undefined ? 0 : new Date(renewed).getTime()) + (current.spec?.leaseDurationSeconds ?? 0) * 1000;
    const free = holder === nodeName || holder === '' || expiresAt <= now.getTime() || (await this.registered(holder));
    if (!free) {
      // The holder usually registers its Node (which frees the lease) long before the lease
      // expires: ask again soon rather than at expiry. Each retry is one attested request.
      const retryAfterMs = Math.max(1_000, Math.min(3_000, expiresAt - now.getTime()));
      throw new Refusal('unavailable', 'lease-held', `another control-plane node (${holder}) is joining; retry later`, {
        retryAfterMs,
      });
    }
    const replacement = this.lease(nodeName, now, current.metadata?.resourceVersion);
    try {
      await coordination.replaceNamespacedLease({ namespace, name, body: replacement });
    } catch (err) {
      if (apiStatusCode(err) === 409) {
        throw new Refusal('unavailable', 'lease-lost', 'another control-plane node took the join lease first; retry', {
          retryAfterMs: 1_000,
        });
      }
      throw err;
    }
  }

  /** Gives back a lease created by mistake: nothing, or what the caller should know was left behind. */
  private async giveBack(nodeName: string): Promise<string> {
    try {
      await this.release(nodeName);
      return '';
    } catch (err) {
      return `; the join lease it took for ${nodeName} could not be given back (${apiErrorMessage(err)})`;
    }
  }

  /** Gives the lease up (after a failed join), if `nodeName` still holds it. */
  async release(nodeName: string): Promise<void> {
    const { coordination, namespace, name } = this.options;
    try {
      const current = await coordination.readNamespacedLease({ namespace, name });
      if (current.spec?.holderIdentity === nodeName) await coordination.deleteNamespacedLease({ namespace, name });
    } catch (err) {
      if (apiStatusCode(err) !== 404) throw err;
    }
  }

  private async registered(nodeName: string): Promise<boolean> {
    try {
      await this.options.core.readNode({ name: nodeName });
      return true;
    } catch (err) {
      if (apiStatusCode(err) === 404) return false;
      throw err;
    }
  }

  private lease(nodeName: string, now: Date, resourceVersion?: string): V1Lease {
    // Lease times are metav1.MicroTime: kube-apiserver parses them as RFC 3339 with exactly six
    // fractional digits and answers 400 to the three a plain Date serialises to
    // (kubernetes-client/javascript#828). V1MicroTime serialises with six.
    const micro = new V1MicroTime(now.getTime());
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.options.name,
        namespace: this.options.namespace,
        ...(resourceVersion === undefined ? {} : { resourceVersion }),
      },
      spec: {
        holderIdentity: nodeName,
        leaseDurationSeconds: Math.ceil(this.options.holdMs / 1000),
        acquireTime: micro,
        renewTime: micro,
      },
    };
  }
}
