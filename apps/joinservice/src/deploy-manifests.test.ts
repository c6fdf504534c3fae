import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { repoRoot } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { createProgram } from './program.js';

const dir = join(repoRoot(), 'deploy', 'joinservice');
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  DaemonSet,
  ServiceAccount,
  Role,
  RoleBinding,
  ClusterRole,
  ClusterRoleBinding,
};

async function documents(): Promise<Record<string, unknown>[]> {
  const files = ['serviceaccount.yaml', 'rbac.yaml', 'daemonset.yaml'];
  const docs: Record<string, unknown>[] = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(await readFile(join(dir, file), 'utf8'))) {
      expect(doc.errors, file).toEqual([]);
      docs.push(doc.toJS() as Record<string, unknown>);
    }
  }
  return docs;
}

describe('JoinService manifests', () => {
  it('validate against the Kubernetes schemas', async () => {
    const docs = await documents();
    expect(docs.map((d) => d['kind'])).toEqual([
      'ServiceAccount',
      'Role',
      'RoleBinding',
      'ClusterRole',
      'ClusterRoleBinding',
      'DaemonSet',
    ]);
    for (const doc of docs) {
      const Model = MODELS[String(doc['kind'])];
      expect(Model, String(doc['kind'])).toBeDefined();
      expect(() => {
        new Model!(doc as never).validate();
      }).not.toThrow();
    }
  });

  it('catch a broken manifest (the validation can fail)', () => {
    expect(() => {
      new DaemonSet({
        metadata: { name: 'x' },
        spec: { selector: {}, template: { spec: { containers: [{ image: 'x' }] } } },
      } as never).validate();
    }).toThrow(/name/);
  });

  it('serve port 30090 on the host network and pass only flags the program knows, with the ports it serves', async () => {
    const docs = await documents();
    const daemonSet = docs.find((d) => d['kind'] === 'DaemonSet') as {
      spec: {
        template: {
          spec: {
            hostNetwork?: boolean;
            containers: {
              args: string[];
              ports: { containerPort: number }[];
              env: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
              volumeMounts: { readOnly?: boolean }[];
            }[];
            nodeSelector: Record<string, string>;
          };
        };
      };
    };
    // The nodes' own source addresses reach it (its per-address rules, docs/joinservice.md), and no
    // Service proxy stands between it and its node's API server.
    expect(daemonSet.spec.template.spec.hostNetwork).toBe(true);
    const container = daemonSet.spec.template.spec.containers[0]!;
    const known = new Set(createProgram().options.map((o) => o.long));
    for (const arg of container.args) expect(known, arg).toContain(arg.split('=')[0]);
    expect(container.args).toContain('--port=30090');
    expect(container.ports.map((p) => p.containerPort)).toContain(30090);
    const apiHost = container.env.find((e) => e.name === 'KUBERNETES_SERVICE_HOST');
    expect(apiHost?.valueFrom?.fieldRef?.fieldPath).toBe('status.hostIP');
    // Rooted attestation, tickets bound to registered machines, and a host that proves itself.
    expect(container.args).toContain('--attestation-variant=tpm2-ek');
    expect(container.args.some((a) => a.startsWith('--instance-registry-url='))).toBe(true);
    expect(container.args).toContain('--attestation-agent=/run/constellation/attestation-agent.sock');
    expect(container.volumeMounts.every((m) => m.readOnly === true)).toBe(true);
    expect(daemonSet.spec.template.spec.nodeSelector).toEqual({ 'node-role.kubernetes.io/control-plane': '' });
  });

  it('grant no access to Secrets at all: joins mint no bootstrap token', async () => {
    const roles = (await documents()).filter((d) => d['kind'] === 'Role' || d['kind'] === 'ClusterRole') as {
      rules: { resources: string[]; verbs: string[] }[];
    }[];
    const secretVerbs = roles.flatMap((role) =>
      role.rules.filter((r) => r.resources.includes('secrets') || r.resources.includes('*')).flatMap((r) => r.verbs),
    );
    expect(secretVerbs).toEqual([]);
  });
});
