import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '@constellation/errors';

/*
 * What a control plane joining without a certificate key must bring
 * (cmd/kubeadm/app/phases/certs/certs.go SharedCertificateExists): the cluster, front-proxy and
 * etcd CAs, each a certificate that loads and is a CA with a key that loads
 * (validateCACertAndKey), and the service-account key pair (validatePrivatePublicKey), checked in
 * kubeadm's order. Paths are shown as on a node.
 */

const CERTIFICATES_DIR = '/etc/kubernetes/pki';

async function load<T>(dir: string, file: string, parse: (pem: string) => T): Promise<T> {
  let pem: string;
  try {
    pem = await readFile(join(dir, file), 'utf8');
  } catch {
    throw new Error(`open ${CERTIFICATES_DIR}/${file}: no such file or directory`);
  }
  return parse(pem);
}

async function caErrors(dir: string, base: string, ux: string): Promise<string[]> {
  let cert: X509Certificate;
  try {
    cert = await load(dir, `${base}.crt`, (pem) => new X509Certificate(pem));
  } catch (err) {
    return [
      `failure loading certificate for ${ux}: couldn't load the certificate file ${CERTIFICATES_DIR}/${base}.crt: ${errorMessage(err)}`,
    ];
  }
  if (!cert.ca) return [`certificate ${ux} is not a CA`];
  try {
    await load(dir, `${base}.key`, (pem) => createPrivateKey(pem));
  } catch (err) {
    return [`failure loading key for ${ux}: ${errorMessage(err)}`];
  }
  return [];
}

/** SharedCertificateExists' aggregated error, or undefined. */
export async function sharedCertificateError(dir: string): Promise<string | undefined> {
  const errors = await caErrors(dir, 'ca', 'CA');
  try {
    await load(dir, 'sa.key', (pem) => createPrivateKey(pem));
    await load(dir, 'sa.pub', (pem) => createPublicKey(pem));
  } catch (err) {
    errors.push(`failure loading key for service account: ${errorMessage(err)}`);
  }
  errors.push(...(await caErrors(dir, 'front-proxy-ca', 'front-proxy CA')));
  errors.push(...(await caErrors(dir, 'etcd/ca', 'etcd CA')));
  // utilerrors.NewAggregate: one message, or all of them in brackets.
  if (errors.length === 0) return undefined;
  return errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`;
}
