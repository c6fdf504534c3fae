import { isIP } from 'node:net';
import type { InitRequest } from '@constellation/proto';
import { Refusal } from '@constellation/errors';
import { kubernetesServiceAddress } from '@constellation/kubeadm/api-server-alt-names';

const VERSION = /^v\d+\.\d+\.\d+$/;
const NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS = /^[a-zA-Z0-9]([-a-zA-Z0-9.]{0,251}[a-zA-Z0-9])?$/;

/** Throws INVALID_ARGUMENT naming the first field that is wrong; nothing has happened yet. */
export function checkInitRequest(request: InitRequest): void {
  const bad = (field: string, expected: string): never => {
    throw new Refusal('invalid-request', 'init-request', `init request field ${field}: ${expected}`);
  };
  if (request.initSecret.length === 0 || request.initSecret.length > 256) bad('init_secret', 'must be 1 to 256 bytes');
  if (request.masterSecret.length < 16 || request.masterSecret.length > 64)
    bad('master_secret', `must be 16 to 64 bytes, got ${request.masterSecret.length}`);
  if (request.masterSalt.length !== 32) bad('master_salt', `must be 32 bytes, got ${request.masterSalt.length}`);
  if (request.measurementSalt.length !== 32)
    bad('measurement_salt', `must be 32 bytes, got ${request.measurementSalt.length}`);
  if (request.kubernetesVersion !== '' && !VERSION.test(request.kubernetesVersion))
    bad('kubernetes_version', `must look like v1.32.9, got "${request.kubernetesVersion.slice(0, 32)}"`);
  if (request.clusterName !== '' && !NAME.test(request.clusterName))
    bad('cluster_name', 'must be a lowercase DNS label of at most 63 characters');
  if (request.apiserverCertSans.length > 64) bad('apiserver_cert_sans', 'at most 64 entries');
  for (const san of request.apiserverCertSans) {
    if (isIP(san) === 0 && !DNS.test(san))
      bad('apiserver_cert_sans', `"${san.slice(0, 64)}" is neither an IP address nor a DNS name`);
  }
  if (request.serviceCidr !== '' && !/^[0-9a-fA-F.:]+\/\d{1,3}$/.test(request.serviceCidr))
    bad('service_cidr', `must be a CIDR like 10.96.0.0/12`);
  if (request.serviceCidr !== '') {
    // The API server's service address comes from it (published with the cluster configuration).
    try {
      kubernetesServiceAddress(request.serviceCidr);
    } catch (err) {
      bad('service_cidr', `must be a CIDR like 10.96.0.0/12 (${err instanceof Error ? err.message : String(err)})`);
    }
  }
  if (request.kubernetesComponents.length > 64) bad('kubernetes_components', 'at most 64 entries');
}
