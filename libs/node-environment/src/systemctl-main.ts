// A node's `systemctl` as a program of its own (`node dist/systemctl-main.js <socket> <args...>`),
// for the tests' machines; mini runs the same function through its CLI (`constellation mini systemctl`).
import { systemctl } from './systemctl.js';

const [socket, ...args] = process.argv.slice(2);
if (socket === undefined) {
  process.stderr.write('usage: systemctl-main.js <control-socket> <systemctl arguments...>\n');
  process.exit(2);
}
process.exitCode = await systemctl(socket, args, (line) => {
  process.stdout.write(`${line}\n`);
});
