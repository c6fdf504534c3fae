import { describe, expect, it } from 'vitest';
import { generateMasterSecret, masterSecretFromJson, masterSecretToJson } from './master-secret.js';
import { errorMessage } from '@constellation/errors';

describe('master secret file', () => {
  it('round-trips', () => {
    const secret = generateMasterSecret();
    expect(masterSecretFromJson(masterSecretToJson(secret))).toEqual(secret);
  });

  it('names the problem without echoing the value', () => {
    const secretValue = Buffer.alloc(8, 7).toString('base64');
    const short = JSON.stringify({ key: secretValue, salt: Buffer.alloc(32).toString('base64') });
    expect(() => masterSecretFromJson(short)).toThrow('master secret file: key must be at least 16 bytes, got 8');
    try {
      masterSecretFromJson(short);
    } catch (err) {
      expect(errorMessage(err)).not.toContain(secretValue);
    }
    expect(() => masterSecretFromJson('{"key": 1, "salt": ""}')).toThrow('"key" must be base64');
    expect(() => masterSecretFromJson('{"key":"AAAA","salt":"AAAA","extra":1}')).toThrow('unknown field "extra"');
    expect(() => masterSecretFromJson('nope')).toThrow('not valid JSON');
  });
});
