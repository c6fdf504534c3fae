import { packageProject } from '../vitest.shared.ts';

export default packageProject('tools', {
  include: ['lint/**/*.test.mjs', 'kubernetes/**/*.test.ts', 'conformance/**/*.test.ts'],
});
