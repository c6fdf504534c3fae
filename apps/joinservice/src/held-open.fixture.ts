// Test program: a process whose service has closed, held open by a timer (`held`) or not (`idle`).
import { createLogger } from '@constellation/logger';
import { exitWhenClosed } from './exit-when-closed.js';

const [mode, graceMs] = process.argv.slice(2);
if (mode === 'held') setInterval(() => undefined, 1_000);
exitWhenClosed(createLogger({ service: 'joinservice' }), Number(graceMs));
