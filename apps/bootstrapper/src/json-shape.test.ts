import { describe, expect, it } from 'vitest';
import {
  arrayAt,
  choiceField,
  hostField,
  integerField,
  ipAddressField,
  nodeNameField,
  objectAt,
  stringField,
} from './json-shape.js';

describe('JSON shape checks', () => {
  it('reads the fields of a well-formed object', () => {
    const object = objectAt({ name: 'n', role: 'worker', port: 9000 }, '');
    expect(stringField(object, 'name', { nonEmpty: true, pattern: /^n$/ })).toBe('n');
    expect(choiceField(object, 'role', ['control-plane', 'worker'] as const)).toBe('worker');
    expect(integerField(object, 'port')).toBe(9000);
  });

  it('names the field and what was expected', () => {
    const object = objectAt({ name: '', role: 'admin', port: 1.5, id: 'XY' }, 'self');
    expect(() => stringField(object, 'name', { nonEmpty: true })).toThrow('self.name: expected a non-empty string');
    expect(() => stringField(object, 'missing')).toThrow('self.missing: expected a string, got nothing');
    expect(() => stringField(object, 'id', { pattern: /^[0-9a-f]+$/ })).toThrow(
      'self.id: expected a string matching /^[0-9a-f]+$/',
    );
    expect(() => choiceField(object, 'role', ['control-plane', 'worker'])).toThrow(
      'self.role: expected one of "control-plane", "worker", got "admin"',
    );
    expect(() => integerField(object, 'port')).toThrow('self.port: expected an integer, got 1.5');
  });

  it('reads IP addresses, and names what is not one', () => {
    const object = objectAt({ v4: '10.42.0.1', v6: 'fd00::1', host: 'node-1.example', bad: '10.42.0.256' }, 'self');
    expect(ipAddressField(object, 'v4')).toBe('10.42.0.1');
    expect(ipAddressField(object, 'v6')).toBe('fd00::1');
    expect(() => ipAddressField(object, 'host')).toThrow('self.host: expected an IP address, got "node-1.example"');
    expect(() => ipAddressField(object, 'bad')).toThrow('self.bad: expected an IP address, got "10.42.0.256"');
    expect(() => ipAddressField(object, 'missing')).toThrow('self.missing: expected a string, got nothing');
    // net.isIP takes a zone index; a certificate (and so the node's kubelet) cannot carry one.
    expect(() => ipAddressField(objectAt({ ip: 'fe80::1%eth0' }, ''), 'ip')).toThrow(
      'ip: expected an IP address without a zone index, got "fe80::1%eth0"',
    );
  });

  it('reads node names and hosts, and names what is not one', () => {
    const object = objectAt(
      {
        name: 'worker-1.rack-2',
        upper: 'Worker-1',
        spaced: 'worker 1',
        long: 'a'.repeat(254),
        host: 'API.example.test',
      },
      'self',
    );
    expect(nodeNameField(object, 'name')).toBe('worker-1.rack-2');
    for (const key of ['upper', 'spaced', 'long'])
      expect(() => nodeNameField(object, key), key).toThrow(
        `self.${key}: expected a Kubernetes node name (lower-case letters, digits, "-" and ".", at most 253 characters), got`,
      );
    expect(hostField(object, 'host')).toBe('API.example.test');
    expect(hostField(objectAt({ host: 'fd00::2' }, ''), 'host')).toBe('fd00::2');
    expect(() => hostField(objectAt({ host: 'fd00::2%eth0' }, ''), 'host')).toThrow(
      'host: expected an IP address or a DNS name, got "fd00::2%eth0"',
    );
  });

  it('reads an integer within a range, naming the range', () => {
    const object = objectAt({ port: 0, big: 70_000, ok: 6443 }, 'endpoint');
    const port = { min: 1, max: 65_535 };
    expect(integerField(object, 'ok', port)).toBe(6443);
    expect(() => integerField(object, 'port', port)).toThrow(
      'endpoint.port: expected an integer from 1 to 65535, got 0',
    );
    expect(() => integerField(object, 'big', port)).toThrow(
      'endpoint.big: expected an integer from 1 to 65535, got 70000',
    );
  });

  it('refuses documents of the wrong kind, and unlisted fields when strict', () => {
    expect(() => objectAt([], '')).toThrow('document: expected an object, got an array');
    expect(() => objectAt(null, 'endpoint')).toThrow('endpoint: expected an object, got null');
    expect(() => objectAt({ role: 'worker', extra: 1 }, '', ['role'])).toThrow('extra: unexpected field');
    expect(() => arrayAt({}, '', (v) => v)).toThrow('document: expected an array, got an object');
  });

  it('names the index of a bad array element', () => {
    const read = (value: unknown, path: string): string => stringField(objectAt(value, path), 'ip');
    expect(arrayAt([{ ip: 'a' }, { ip: 'b' }], '', read)).toEqual(['a', 'b']);
    expect(() => arrayAt([{ ip: 'a' }, { ip: 7 }], '', read)).toThrow('1.ip: expected a string, got a number');
  });
});
