// Quote and verification time of our TPM client against swtpm, next to tpm2-tools run as
// processes on the same TPM. Prints medians; never asserts.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TpmIssuer, TpmValidator, quoteExtraData } from '@constellation/attestation';
import { createTempDir, runChecked, startSwtpm } from '@constellation/testing';
import { SocketTransport, Tpm, akTemplate, publicKeyObject } from '@constellation/tpm';
import { printTimings, time } from './timing.js';

const RUNS_OURS = Number(process.env['BENCH_RUNS'] ?? 200);
const RUNS_TOOLS = Math.max(5, Math.floor(RUNS_OURS / 4));

const swtpm = await startSwtpm();
const dir = await createTempDir('constellation-bench-');
const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
try {
  const pcrs = [...Array(24).keys()];
  const nonce = randomBytes(32);
  const userData = randomBytes(32);
  const extraData = quoteExtraData(userData, nonce);
  const issuer = new TpmIssuer(tpm);
  const validator = new TpmValidator({ variant: 'qemu-vtpm', measurements: new Map() });

  const ak = await tpm.createPrimary('endorsement', akTemplate('ecc'));
  const ours = [
    await time('ours: TPM2_Quote, 24 PCRs, AK loaded', RUNS_OURS, () =>
      tpm.quote(ak.handle, extraData, [{ hash: 'sha256', pcrs }]),
    ),
    await time('ours: attestation document (AK create+quote+read+flush)', RUNS_OURS, () =>
      issuer.issue(userData, nonce),
    ),
  ];
  const document = await issuer.issue(userData, nonce);
  ours.push(
    await time('ours: validate document', RUNS_OURS, () => Promise.resolve(validator.validate(document, nonce))),
  );
  const quote = await tpm.quote(ak.handle, extraData, [{ hash: 'sha256', pcrs }]);
  await tpm.flushContext(ak.handle);
  await tpm.close(); // swtpm serves one connection at a time; the tools need it now

  // tpm2-tools: an AK in a context file, then tpm2_quote and tpm2_checkquote as processes.
  const env = swtpm.toolEnv;
  const run = (program: string, args: string[]) => runChecked(program, args, { timeoutMs: 30_000, env, cwd: dir.path });
  await run('tpm2_createek', ['-c', 'ek.ctx', '-G', 'ecc']);
  await run('tpm2_flushcontext', ['-t']);
  await run('tpm2_createak', ['-C', 'ek.ctx', '-c', 'ak.ctx', '-G', 'ecc', '-g', 'sha256', '-s', 'ecdsa']);
  await run('tpm2_flushcontext', ['-t']);
  await writeFile(join(dir.path, 'ak.pem'), publicKeyObject(ak.public).export({ type: 'spki', format: 'pem' }));
  await writeFile(join(dir.path, 'quote.msg'), quote.attest);
  await writeFile(join(dir.path, 'quote.sig'), quote.signature);
  const tools = [
    await time('tpm2_quote process, 24 PCRs', RUNS_TOOLS, async () => {
      await run('tpm2_quote', [
        '-c',
        'ak.ctx',
        '-l',
        'sha256:all',
        '-q',
        extraData.toString('hex'),
        '-m',
        't.msg',
        '-s',
        't.sig',
        '-g',
        'sha256',
      ]);
      await run('tpm2_flushcontext', ['-t']);
    }),
    await time('tpm2_checkquote process', RUNS_TOOLS, () =>
      run('tpm2_checkquote', [
        '-u',
        'ak.pem',
        '-m',
        'quote.msg',
        '-s',
        'quote.sig',
        '-q',
        extraData.toString('hex'),
        '-g',
        'sha256',
      ]),
    ),
  ];
  printTimings(`TPM quote and verification against swtpm (${process.platform}, node ${process.version})`, [
    ...ours,
    ...tools,
  ]);
  console.log('note: the tpm2_quote row includes its tpm2_flushcontext call (swtpm has no resource manager).');
} finally {
  await tpm.close();
  await swtpm.stop();
  await dir.remove();
}
