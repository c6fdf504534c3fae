import { packageProject } from '../../vitest.shared.ts';

export default packageProject('packaging', { timeoutMs: 600_000 });
