import { packageProject } from '../../vitest.shared.ts';

export default packageProject('swtpm', 60_000);
