/**
 * How a tampered worker differs from the node image. Each runs a modified bootstrapper; they differ
 * in what its event log says: the truth ("bootstrapper"), the image's digest in place of the one
 * measured ("log-digest": one event's digest changed), or nothing for PCR 9 ("log-removed").
 */
export const TAMPER_MODES = ['bootstrapper', 'log-digest', 'log-removed'] as const;
export type Tamper = (typeof TAMPER_MODES)[number];
