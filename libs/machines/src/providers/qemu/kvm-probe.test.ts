import { describe, expect, it } from 'vitest';
import { requireProgram } from '@constellation/testing';
import { probeKvm } from './kvm-probe.js';

describe('probeKvm', () => {
  it('answers software emulation, saying why, when there is no KVM device to open', async () => {
    const choice = await probeKvm({ device: '/nonexistent/kvm' });
    expect(choice).toEqual({
      accel: 'tcg',
      reason: expect.stringMatching(/^\/nonexistent\/kvm cannot be opened for reading and writing \(ENOENT/) as unknown,
    });
  });

  it('boots OVMF under KVM and answers kvm only if its boot manager runs, else tcg with what QEMU said', async () => {
    await requireProgram('qemu-system-x86_64', 'qemu-system-x86');
    const choice = await probeKvm({ timeoutMs: 30_000 });
    if (choice.accel === 'kvm') expect(choice.reason).toMatch(/^OVMF reached its boot manager under KVM in \d+ ms$/);
    // Here (a nested PVM host) QEMU aborts setting an MSR, or OVMF never gets that far.
    else expect(choice.reason).toMatch(/cannot be opened|QEMU ended under KVM before|did not reach its boot manager/);
  }, 60_000);

  it('answers tcg naming the program when QEMU cannot run', async () => {
    const choice = await probeKvm({ qemu: '/nonexistent/qemu', device: '/dev/null' });
    expect(choice).toEqual({
      accel: 'tcg',
      reason: expect.stringContaining('cannot run /nonexistent/qemu') as unknown,
    });
  });
});
