import { startSwtpm, useTestEkCa } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { TPM_CC } from './constants.js';
import { readEndorsementKeys } from './endorsement-keys.js';
import type { RsaPublic } from './public-area.js';
import { SocketTransport } from './socket-transport.js';
import { ekTemplate } from './templates.js';
import { Tpm } from './tpm.js';
import type { TpmTransport } from './transport.js';

const RSA_EK_HANDLE = 0x81010001;
const testCa = useTestEkCa();
const started: { swtpm: Swtpm; tpm: Tpm }[] = [];

/** A manufactured swtpm, through a transport that records the command codes it carries. */
async function manufacturedTpm(): Promise<{ tpm: Tpm; commands: number[] }> {
  const swtpm = await startSwtpm({ manufacture: { ca: testCa(), vmid: 'endorsement-keys-test' } });
  const socket = new SocketTransport({ host: swtpm.host, port: swtpm.port, timeoutMs: 10_000 });
  const commands: number[] = [];
  const recording: TpmTransport = {
    description: socket.description,
    send: (command) => {
      commands.push(command.readUInt32BE(6));
      return socket.send(command);
    },
    close: () => socket.close(),
  };
  const tpm = new Tpm(recording);
  await tpm.startup();
  started.push({ swtpm, tpm });
  return { tpm, commands };
}

const regeneratedEk = (tpm: Tpm): Promise<Buffer> =>
  tpm.withEndorsementKey('rsa', (key) => Promise.resolve(key.publicBytes));
const createPrimaries = (commands: number[]): number => commands.filter((c) => c === TPM_CC.CreatePrimary).length;

afterEach(async () => {
  for (const { swtpm, tpm } of started.splice(0)) {
    await tpm.close();
    await swtpm.stop();
  }
});

describe('reading the endorsement keys of a manufactured TPM', () => {
  it('takes the certified EK from its persistent handle instead of regenerating it: only the AK is created', async () => {
    const { tpm, commands } = await manufacturedTpm();
    const keys = await readEndorsementKeys(tpm, 'ecc');
    expect(keys.ekCertificate).toBeDefined();
    expect(createPrimaries(commands)).toBe(1);
    expect(keys.ekPublic.equals(await regeneratedEk(tpm))).toBe(true);
  });

  // A persistent handle is whatever someone put there. An EK-shaped key that is not the certified
  // one (same template, another unique value) must not be sent as this TPM's EK.
  it('regenerates the EK when the persistent handle holds another EK-template key', async () => {
    const { tpm, commands } = await manufacturedTpm();
    await tpm.evictControl(RSA_EK_HANDLE, RSA_EK_HANDLE);
    const impostor = { ...(ekTemplate('rsa') as RsaPublic), modulus: Buffer.alloc(256, 7) };
    const impostorPublic = await tpm.withPrimaryKey('endorsement', impostor, async (key) => {
      await tpm.evictControl(key.handle, RSA_EK_HANDLE);
      return key.publicBytes;
    });
    expect((await tpm.readPublic(RSA_EK_HANDLE)).publicBytes.equals(impostorPublic)).toBe(true);
    commands.length = 0;
    const keys = await readEndorsementKeys(tpm, 'ecc');
    expect(createPrimaries(commands)).toBe(2);
    expect(keys.ekPublic.equals(impostorPublic)).toBe(false);
    expect(keys.ekPublic.equals(await regeneratedEk(tpm))).toBe(true);
  });

  it('regenerates the EK when nothing is persisted', async () => {
    const { tpm, commands } = await manufacturedTpm();
    await tpm.evictControl(RSA_EK_HANDLE, RSA_EK_HANDLE);
    commands.length = 0;
    const keys = await readEndorsementKeys(tpm, 'ecc');
    expect(createPrimaries(commands)).toBe(2);
    expect(keys.ekPublic.equals(await regeneratedEk(tpm))).toBe(true);
  });
});
