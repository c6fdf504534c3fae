/**
 * How far a VM's boot has come, read from its serial console (the image sends the kernel's,
 * the initrd's and systemd's lines there): what `mini up` shows while a VM boots, and the line
 * that says why when the boot stops.
 */
export type VmBootPhase = 'firmware' | 'kernel' | 'initrd' | 'systemd' | 'bootstrapper' | 'failed';

export interface VmBootProgress {
  phase: VmBootPhase;
  /** The initrd's error line when the phase is `failed` (it powers the VM off after it). */
  error?: string;
}

// systemd colours its status lines; the phases are read from the plain text.
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;

/** Markers in the order a boot passes them; the last one seen is the phase. */
const MARKERS: readonly { phase: VmBootPhase; seen: (line: string) => boolean }[] = [
  { phase: 'kernel', seen: (line) => line.includes('] Linux version ') },
  { phase: 'initrd', seen: (line) => line.startsWith('constellation-initrd: started') },
  { phase: 'systemd', seen: (line) => /systemd\[1\]: systemd \d+/.test(line) },
  {
    phase: 'bootstrapper',
    seen: (line) =>
      (line.includes('Started') && line.includes('Constellation node bootstrapper')) ||
      line.includes('constellation-bootstrapper['),
  },
];

export function vmBootProgress(serial: string): VmBootProgress {
  let phase: VmBootPhase = 'firmware';
  for (const raw of serial.split('\n')) {
    const line = raw.replace(ANSI, '').replace(/\r$/, '');
    const error = /^constellation-initrd: error: (.*)$/.exec(line)?.[1];
    if (error !== undefined) return { phase: 'failed', error };
    const index = MARKERS.findIndex((marker) => marker.seen(line));
    if (index >= 0 && index >= MARKERS.findIndex((marker) => marker.phase === phase)) {
      phase = MARKERS[index]?.phase ?? phase;
    }
  }
  return { phase };
}
