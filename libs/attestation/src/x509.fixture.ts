import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

// Tests build their certificates with @peculiar/x509, a library independent of the code under
// test; it needs a WebCrypto provider and a Reflect polyfill.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };
