import { describe, expect, it } from 'vitest';
import { newSigningSecret, SecretBox, UnreadableSecret } from '../../../server/src/domain/webhook-secrets.ts';

describe('SecretBox', () => {
  it('opens what it sealed, again and again, past the number of opened secrets it keeps', () => {
    const box = new SecretBox('server secret');
    const secrets = Array.from({ length: 1_100 }, () => newSigningSecret());
    const sealed = secrets.map((secret) => box.seal(secret));
    for (let round = 0; round < 2; round++) sealed.forEach((stored, index) => expect(box.open(stored)).toBe(secrets[index]));
  });

  it('refuses, every time, a secret sealed under another server secret, even after opening its own', () => {
    const box = new SecretBox('server secret');
    const other = new SecretBox('another server secret').seal(newSigningSecret());
    const own = newSigningSecret();
    expect(box.open(box.seal(own))).toBe(own);
    for (let round = 0; round < 2; round++) expect(() => box.open(other)).toThrow(UnreadableSecret);
    expect(() => box.open('v1.')).toThrow(UnreadableSecret);
  });
});
