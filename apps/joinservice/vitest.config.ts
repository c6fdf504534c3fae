import { packageProject } from '../../vitest.shared.ts';

const project = packageProject('joinservice');
// Most suites start a control plane of their own in a hook (about 5 s idle, more on a loaded
// machine) and stop it in another (kube-apiserver takes up to 10 s to end): hooks get 2 minutes,
// tests keep the default bound.
if (project.test !== undefined) project.test.hookTimeout = 120_000;

export default project;
