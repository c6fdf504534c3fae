export { EventLogError } from './errors.js';
export type { EventLogPosition } from './errors.js';
export { EVENT_TYPES, eventTypeName, eventTypeNumber } from './event-types.js';
export type { EventTypeName } from './event-types.js';
export { bankDigest, bankInfo, isBankName } from './hash-banks.js';
export type { BankName } from './hash-banks.js';
export { EVENT_LOG_LIMITS, MAX_PCR_INDEX, parseEventLog } from './parse-event-log.js';
export type {
  EventLog,
  EventLogFormat,
  LogAlgorithm,
  LogEvent,
  ParseEventLogOptions,
  SpecIdHeader,
} from './parse-event-log.js';
export { eventsForPcr, extendsPcr, initialPcrValue, pcrBanksToJson, replayEventLog } from './replay.js';
export type { PcrBanks } from './replay.js';
export {
  EFI_GLOBAL_VARIABLE_GUID,
  EFI_IMAGE_SECURITY_DATABASE_GUID,
  dataHashesToDigests,
  describeEventData,
} from './event-data.js';
export type { EventDataView, EventDetails } from './event-data.js';
export { DevicePathError, devicePathText } from './device-path.js';
export {
  cString,
  filePathDevicePath,
  guidBytes,
  imageLoadEventData,
  separatorData,
  uefiVariableData,
} from './event-data-builders.js';
export { EventLogWriter } from './event-log-writer.js';
export type { EventLogWriterOptions, EventToWrite, WrittenEvent } from './event-log-writer.js';
export { checkEventPolicy, eventPolicyFromLog, parseEventPolicy } from './event-policy.js';
export type { EventPolicy, EventPolicyRule, EventPolicyViolation } from './event-policy.js';
export { appendEventLog } from './append-event-log.js';
export { COMMAND_LINE_PCRS, readBootApplications, readKernelCommandLines, readSecureBoot } from './boot-state.js';
export type { CommandLineReading, SecureBootReading, SecureBootValue } from './boot-state.js';
export { extendsSeparator, hashesToDigests, measuredBytes } from './measured-bytes.js';
