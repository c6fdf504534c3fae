import { describe, expect, it } from 'vitest';
import { inNamespaces } from './in-namespaces.js';

describe('inNamespaces', () => {
  it('enters the network namespace by its name, the mount namespace by its file, then runs the command as given', () => {
    expect(
      inNamespaces({ net: 'cstl-1', mount: '/run/constellation-nodes/cstl-1.mnt' }, ['sh', '-c', 'echo "$1"']),
    ).toEqual([
      'nsenter',
      ['--net=/run/netns/cstl-1', '--mount=/run/constellation-nodes/cstl-1.mnt', '--', 'sh', '-c', 'echo "$1"'],
    ]);
    expect(inNamespaces({ net: 'cstl-1' }, ['ip', 'addr'])).toEqual([
      'nsenter',
      ['--net=/run/netns/cstl-1', '--', 'ip', 'addr'],
    ]);
  });
});
