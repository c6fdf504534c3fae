export type { EkCa, EkCaKeyAlgorithm } from './ek-ca.js';
export { createEkCa, ekCaDigestOption, ekCaPaths, openEkCa } from './ek-ca.js';
export type { ManufacturedTpm } from './manufacture.js';
export { manufactureTpm } from './manufacture.js';
export type { SwtpmProcess } from './process.js';
export { startSwtpmProcess } from './process.js';

export { findOnPath, requireProgram, runProgram } from './programs.js';
export { canConnect } from './can-connect.js';
export { freePort, freePortPair, isPortFree } from './free-port.js';
