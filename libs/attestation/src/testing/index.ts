// Test-only tools (attackers and fakes) for the refusal tests of other packages. The product never
// imports this entry point.
export type { SoftwareAttesterOptions } from './software-attester.js';
export { SoftwareAttester } from './software-attester.js';
export { DummyIssuer, DummyValidator } from './dummy.js';
