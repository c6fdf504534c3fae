import { packageProject } from '../../vitest.shared.ts';

export default packageProject('machines', { timeoutMs: 120_000 });
