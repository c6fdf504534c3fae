// Cost of the tpm2-ek identity proof against a manufactured swtpm: the verifier's MakeCredential
// and EkIdentityVerifier.challenge, the node's full ActivateCredential path, next to a quote and
// to tpm2-tools (tpm2_quote, tpm2_checkquote, tpm2_makecredential, tpm2_activatecredential) run
// as processes on the same TPM in the same run. Prints medians and p95; never asserts.
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  EkIdentityVerifier,
  TpmIssuer,
  TpmValidator,
  activationProof,
  makeCredential,
  pemCertificatesToDer,
  quoteExtraData,
} from '@constellation/attestation';
import { createEkCa } from '@constellation/swtpm';
import { createTempDir, runChecked, startSwtpm } from '@constellation/testing';
import { SocketTransport, Tpm, akTemplate, ekTemplate, parsePublic } from '@constellation/tpm';
import { printTimings, time } from './timing.js';

const RUNS_CPU = Number(process.env['BENCH_RUNS_CPU'] ?? 1000);
const RUNS_TPM = Number(process.env['BENCH_RUNS'] ?? 100);
const RUNS_TOOLS = Math.max(5, Math.floor(RUNS_TPM / 4));
/** TCG's conventional persistent handle of the RSA EK, where swtpm_setup and Tpm keep it. */
const RSA_EK_HANDLE = 0x81010001;

const dir = await createTempDir('constellation-bench-credential-');
const ca = await createEkCa(join(dir.path, 'ca'), { name: 'Bench' });
const swtpm = await startSwtpm({ manufacture: { ca, vmid: 'bench-node' } });
const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
try {
  const roots = pemCertificatesToDer(await readFile(ca.rootCertPath, 'utf8'));
  const intermediates = pemCertificatesToDer(await readFile(ca.intermediateCertPath, 'utf8'));
  const issuer = await TpmIssuer.rooted(tpm, { ekIntermediates: intermediates });
  const rooted = issuer.rooted;
  if (rooted === undefined) throw new Error('TpmIssuer.rooted returned an unrooted issuer');
  const verifier = new EkIdentityVerifier({ roots });
  const rsaEk = parsePublic(rooted.identity.ekPublic);
  const eccEk = await tpm.withEndorsementKey('ecc', (key) => Promise.resolve(key.public));
  const secret = randomBytes(32);

  // Verifier side: pure CPU, no TPM.
  const verifierSide = [
    await time('ours: makeCredential, RSA-2048 EK (OAEP + KDFa + AES-CFB + HMAC)', RUNS_CPU, () =>
      Promise.resolve(makeCredential(rsaEk, rooted.akName, secret)),
    ),
    await time('ours: makeCredential, ECC P-256 EK (ECDH + KDFe + KDFa + AES-CFB + HMAC)', RUNS_CPU, () =>
      Promise.resolve(makeCredential(eccEk, rooted.akName, secret)),
    ),
    await time(
      'ours: EkIdentityVerifier.challenge, certificates seen before (parses and signatures cached)',
      RUNS_CPU,
      () => verifier.challenge(rooted.identity, rooted.akPublic),
    ),
  ];

  // Node side: our TPM client against the swtpm.
  const pcrs = [...Array(24).keys()];
  const nonce = randomBytes(32);
  const extraData = quoteExtraData(Buffer.alloc(32), nonce);
  const pending = await verifier.challenge(rooted.identity, rooted.akPublic);
  const ak = await tpm.createPrimary('endorsement', akTemplate('ecc'));
  const quoteRow = await time('ours: TPM2_Quote, 24 PCRs, AK loaded', RUNS_TPM, () =>
    tpm.quote(ak.handle, extraData, [{ hash: 'sha256', pcrs }]),
  );
  const rsaEkCreate = await time('ours: CreatePrimary RSA-2048 EK + FlushContext', RUNS_TPM, async () => {
    const ek = await tpm.createPrimary('endorsement', ekTemplate('rsa'));
    await tpm.flushContext(ek.handle);
  });
  const ek = await tpm.createPrimary('endorsement', ekTemplate('rsa'));
  const activateOnly = await time(
    'ours: session + PolicySecret + ActivateCredential + flush, AK and EK loaded',
    RUNS_TPM,
    () =>
      tpm.activateCredential(
        ak.handle,
        ek.handle,
        Buffer.from(pending.credential.credentialBlob),
        Buffer.from(pending.credential.encryptedSecret),
      ),
  );
  await tpm.flushContext(ek.handle);
  await tpm.flushContext(ak.handle);
  const nodeSide = [
    quoteRow,
    await time('ours: attestation document (AK create + quote + PCR read + flush)', RUNS_TPM, () =>
      issuer.issue(Buffer.alloc(32), nonce),
    ),
    rsaEkCreate,
    await time('ours: CreatePrimary ECC P-256 AK + FlushContext', RUNS_TPM, async () => {
      const key = await tpm.createPrimary('endorsement', akTemplate('ecc'));
      await tpm.flushContext(key.handle);
    }),
    activateOnly,
    await time(
      'ours: activation regenerating the RSA EK (AK + EK CreatePrimary, session, activate, flushes)',
      RUNS_TPM,
      () =>
        tpm.withPrimaryKeys(
          [
            { hierarchy: 'endorsement', template: akTemplate('ecc') },
            { hierarchy: 'endorsement', template: ekTemplate('rsa') },
          ],
          ([akKey, ekKey]) =>
            tpm.activateCredential(
              akKey?.handle ?? 0,
              ekKey?.handle ?? 0,
              Buffer.from(pending.credential.credentialBlob),
              Buffer.from(pending.credential.encryptedSecret),
            ),
        ),
    ),
    await time(
      "ours: rooted.activate (the node's path: AK CreatePrimary, resident EK, session, activate, flushes)",
      RUNS_TPM,
      () => rooted.activate(pending.credential),
    ),
    await time('ours: whole proof (challenge + rooted.activate + activationProof + prove)', RUNS_TPM, async () => {
      const challenge = await verifier.challenge(rooted.identity, rooted.akPublic);
      const recovered = await rooted.activate(challenge.credential);
      challenge.prove(activationProof('join', recovered, nonce, rooted.akName), nonce, 'join');
    }),
  ];
  const validator = new TpmValidator({ measurements: new Map() });
  const document = await issuer.issue(Buffer.alloc(32), nonce);
  verifierSide.push(
    await time('ours: validate tpm2-ek document (quote signature + PCRs)', RUNS_CPU, () =>
      Promise.resolve(validator.validate(document, nonce)),
    ),
  );
  const resident = await tpm.readPublic(RSA_EK_HANDLE).then(
    (key) => key.publicBytes.equals(rooted.identity.ekPublic),
    () => false,
  );
  await tpm.close(); // swtpm serves one connection at a time; the tools need it now

  // tpm2-tools as processes on the same TPM: saved AK and EK contexts, a credential file.
  const env = swtpm.toolEnv;
  const run = (program: string, args: string[]) => runChecked(program, args, { timeoutMs: 30_000, env, cwd: dir.path });
  await run('tpm2_createek', ['-c', 'ek.ctx', '-G', 'rsa', '-u', 'ek.pub']);
  await run('tpm2_flushcontext', ['-t']);
  await run('tpm2_createak', [
    '-C',
    'ek.ctx',
    '-c',
    'ak.ctx',
    '-G',
    'ecc',
    '-g',
    'sha256',
    '-s',
    'ecdsa',
    '-n',
    'ak.name',
  ]);
  await run('tpm2_flushcontext', ['-t']);
  const toolAkName = (await readFile(join(dir.path, 'ak.name'))).toString('hex');
  await writeFile(join(dir.path, 'secret.bin'), secret);
  const makeToolCredential = () =>
    run('tpm2_makecredential', ['-T', 'none', '-e', 'ek.pub', '-s', 'secret.bin', '-n', toolAkName, '-o', 'cred.out']);
  await makeToolCredential();
  const toolSession = async () => {
    await run('tpm2_startauthsession', ['--policy-session', '-S', 'session.ctx']);
    await run('tpm2_policysecret', ['-S', 'session.ctx', '-c', 'e']);
  };
  const toolActivation = async () => {
    await run('tpm2_activatecredential', [
      '-c',
      'ak.ctx',
      '-C',
      'ek.ctx',
      '-i',
      'cred.out',
      '-o',
      'act.out',
      '-P',
      'session:session.ctx',
    ]);
    await run('tpm2_flushcontext', ['session.ctx']);
    await run('tpm2_flushcontext', ['-t']);
  };
  // tpm2_quote and tpm2_checkquote anchors are printed by tpm-quote.ts in the same `npm run bench`.
  const tools = [
    await time('tpm2_makecredential -T none process (RSA EK, no TPM)', RUNS_TOOLS, makeToolCredential),
    await time('tpm2_createek -G rsa process (+ tpm2_flushcontext -t)', RUNS_TOOLS, async () => {
      await run('tpm2_createek', ['-c', 'ek2.ctx', '-G', 'rsa']);
      await run('tpm2_flushcontext', ['-t']);
    }),
    await time(
      'tpm2_activatecredential + 2 tpm2_flushcontext processes (saved AK+EK contexts; session untimed)',
      RUNS_TOOLS,
      toolActivation,
      { before: toolSession },
    ),
    await time(
      'tpm2 activation as processes: startauthsession + policysecret + activatecredential + flush',
      RUNS_TOOLS,
      async () => {
        await toolSession();
        await toolActivation();
      },
    ),
  ];
  printTimings(
    `tpm2-ek identity proof: credential making and activation against a manufactured swtpm (${process.platform}, node ${process.version})`,
    [...verifierSide, ...nodeSide, ...tools],
  );
  console.log(
    resident
      ? 'note: the RSA EK is resident at 0x81010001 (persisted by swtpm_setup, else by the first activation): rooted.activate does not regenerate it.'
      : 'note: the RSA EK is NOT resident at 0x81010001: rooted.activate regenerates it every time.',
  );
  console.log(
    'note: rows marked "ours" run in this process over one TCP connection to swtpm; tpm2-tools rows are whole processes (exec + TCTI setup) on the same swtpm.',
  );
} finally {
  await tpm.close();
  await swtpm.stop();
  await dir.remove();
}
