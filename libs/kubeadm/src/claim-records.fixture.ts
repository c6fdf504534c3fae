import type { KubeApiServer } from '@constellation/sandbox';

export const CONFIG_MAPS = {
  group: '',
  version: 'v1',
  resource: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
} as const;

/** What a call that must fail threw. */
export const failure = (call: Promise<unknown>): Promise<unknown> =>
  call.then(
    () => {
      throw new Error('the call succeeded');
    },
    (err: unknown) => err,
  );

/** Whether the API stand-in holds ConfigMap kube-system/`name`. */
export const recordedIn = (api: KubeApiServer, name: string): boolean =>
  api.store
    .list(CONFIG_MAPS, 'kube-system')
    .items.some((c) => (c as { metadata?: { name?: string } }).metadata?.name === name);
