/**
 * Event types of the TCG PC Client Platform Firmware Profile (section "Event Types") and its UEFI
 * additions. The numbers are the specification's; names are how logs and tools print them.
 */
export const EVENT_TYPES = {
  EV_PREBOOT_CERT: 0x00000000,
  EV_POST_CODE: 0x00000001,
  EV_UNUSED: 0x00000002,
  EV_NO_ACTION: 0x00000003,
  EV_SEPARATOR: 0x00000004,
  EV_ACTION: 0x00000005,
  EV_EVENT_TAG: 0x00000006,
  EV_S_CRTM_CONTENTS: 0x00000007,
  EV_S_CRTM_VERSION: 0x00000008,
  EV_CPU_MICROCODE: 0x00000009,
  EV_PLATFORM_CONFIG_FLAGS: 0x0000000a,
  EV_TABLE_OF_DEVICES: 0x0000000b,
  EV_COMPACT_HASH: 0x0000000c,
  EV_IPL: 0x0000000d,
  EV_IPL_PARTITION_DATA: 0x0000000e,
  EV_NONHOST_CODE: 0x0000000f,
  EV_NONHOST_CONFIG: 0x00000010,
  EV_NONHOST_INFO: 0x00000011,
  EV_OMIT_BOOT_DEVICE_EVENTS: 0x00000012,
  EV_POST_CODE2: 0x00000013,
  EV_EFI_EVENT_BASE: 0x80000000,
  EV_EFI_VARIABLE_DRIVER_CONFIG: 0x80000001,
  EV_EFI_VARIABLE_BOOT: 0x80000002,
  EV_EFI_BOOT_SERVICES_APPLICATION: 0x80000003,
  EV_EFI_BOOT_SERVICES_DRIVER: 0x80000004,
  EV_EFI_RUNTIME_SERVICES_DRIVER: 0x80000005,
  EV_EFI_GPT_EVENT: 0x80000006,
  EV_EFI_ACTION: 0x80000007,
  EV_EFI_PLATFORM_FIRMWARE_BLOB: 0x80000008,
  EV_EFI_HANDOFF_TABLES: 0x80000009,
  EV_EFI_PLATFORM_FIRMWARE_BLOB2: 0x8000000a,
  EV_EFI_HANDOFF_TABLES2: 0x8000000b,
  EV_EFI_VARIABLE_BOOT2: 0x8000000c,
  EV_EFI_GPT_EVENT2: 0x8000000d,
  EV_EFI_HCRTM_EVENT: 0x80000010,
  EV_EFI_VARIABLE_AUTHORITY: 0x800000e0,
  EV_EFI_SPDM_FIRMWARE_BLOB: 0x800000e1,
  EV_EFI_SPDM_FIRMWARE_CONFIG: 0x800000e2,
  EV_EFI_SPDM_DEVICE_POLICY: 0x800000e3,
  EV_EFI_SPDM_DEVICE_AUTHORITY: 0x800000e4,
} as const;

/** The name of an event type the specification defines. */
export type EventTypeName = keyof typeof EVENT_TYPES;

const NAMES = new Map<number, EventTypeName>(
  Object.entries(EVENT_TYPES).map(([name, value]) => [value, name as EventTypeName]),
);

/** "EV_IPL" for 0x0d; "unknown (0x12345678)" for a number the specification does not define. */
export function eventTypeName(type: number): string {
  return NAMES.get(type) ?? `unknown (0x${type.toString(16).padStart(8, '0')})`;
}

/** The number of a named event type. */
export function eventTypeNumber(name: EventTypeName): number {
  return EVENT_TYPES[name];
}
