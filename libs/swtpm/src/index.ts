export type { EkCa, EkCaOptions } from './ek-ca.js';
export { createEkCa, ekCaPaths, openEkCa } from './ek-ca.js';
export type { ManufacturedTpm, ManufactureOptions } from './manufacture.js';
export { manufactureTpm, spkiSha256 } from './manufacture.js';
export type { SwtpmEndpoints, SwtpmProcess, SwtpmProcessOptions, TcpListen, UnixListen } from './process.js';
export { defaultSockets, startSwtpmProcess } from './process.js';
export type { RunResult } from './programs.js';
export { requireProgram, runProgram, SwtpmToolError } from './programs.js';
export { freePort, freePortPair, isPortFree } from './free-port.js';
