import { packageProject } from '../../vitest.shared.ts';

export default packageProject('packaging', 600_000);
