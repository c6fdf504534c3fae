import { packageProject } from '../../vitest.shared.ts';

export default packageProject('control-plane', { timeoutMs: 120_000 });
