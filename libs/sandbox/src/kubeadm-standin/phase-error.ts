/** A kubeadm-style failure: printed as "error execution phase <phase>: <message>", exit code 1. */
export class PhaseError extends Error {
  readonly phase: string;
  constructor(phase: string, message: string) {
    super(`error execution phase ${phase}: ${message}`);
    this.phase = phase;
  }
}
