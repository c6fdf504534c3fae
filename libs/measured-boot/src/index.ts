export { PeImageError, UkiError } from './errors.js';
export {
  CERTIFICATE_TABLE_INDEX,
  PE_LIMITS,
  loadedSection,
  loadedSectionBytes,
  loadedSize,
  readPeImage,
} from './pe-image.js';
export type { DataDirectory, LoadedSection, PeFormat, PeImage, PeReadOptions, PeSection } from './pe-image.js';
export { authenticodeDigest, authenticodeRanges } from './authenticode.js';
export type { AuthenticodeAlgorithm, AuthenticodeOptions, HashedRange } from './authenticode.js';
export { UKI_SECTION_NAMES, readUki } from './uki.js';
export type { Uki, UkiSection, UkiSectionName } from './uki.js';
export { stubLoadOptions } from './load-options.js';
export type { StubLoadOptions } from './load-options.js';
export { extendSha256, predictedPcr } from './predicted-pcr.js';
export type { ExpectedEvent, MeasuredBy, PredictedPcr } from './predicted-pcr.js';
export { predictUkiBoot } from './predict-pcrs.js';
export type { PredictUkiBootOptions, UkiBootPrediction } from './predict-pcrs.js';
export { BOOT_PHASES, extendBootPhases } from './boot-phases.js';
export type { BootPhase } from './boot-phases.js';
export { IMAGE_PCRS, imageReferenceValues, referenceAttestationFile } from './reference-values.js';
export type { ImageReferenceValues } from './reference-values.js';
export { imageBootComponents } from './image-boot-components.js';
