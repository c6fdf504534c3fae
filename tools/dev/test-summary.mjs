// Prints the plain closing line CI reads, from vitest's JSON report: "N passed, N failed[, N skipped]".
import { readFileSync } from 'node:fs';

const report = JSON.parse(readFileSync(process.argv[2] ?? '.tmp/vitest.json', 'utf8'));
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
// A suite that failed to load counts as a failure even though none of its tests ran.
const brokenSuites = (report.testResults ?? []).filter(
  (r) => r.status === 'failed' && r.assertionResults.length === 0,
).length;
// Unhandled errors fail the run (report.success is false) without failing a test: count one.
const failed =
  report.numFailedTests +
  brokenSuites +
  (report.success === false && report.numFailedTests + brokenSuites === 0 ? 1 : 0);
console.log(`${report.numPassedTests} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
