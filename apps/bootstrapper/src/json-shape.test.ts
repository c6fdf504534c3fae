import { describe, expect, it } from 'vitest';
import { arrayAt, choiceField, integerField, ipAddressField, objectAt, stringField } from './json-shape.js';

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
