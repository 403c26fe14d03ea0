import { ConfigError, loadConfig } from '@loupe/server';
import { describe, expect, it } from 'vitest';

describe('LOUPE_TRUST_PROXY', () => {
  const trustProxy = (value?: string) => loadConfig(value === undefined ? {} : { LOUPE_TRUST_PROXY: value }).trustProxy;

  it('is off by default and with "false"', () => {
    expect(trustProxy()).toBe(false);
    expect(trustProxy('')).toBe(false);
    expect(trustProxy('false')).toBe(false);
  });

  it('takes a hop count, as a number (Express reads a string as an address list)', () => {
    expect(trustProxy('1')).toBe(1);
    expect(trustProxy('0')).toBe(0);
    expect(trustProxy('3')).toBe(3);
  });

  it('takes a comma-separated list of addresses, CIDRs and preset names', () => {
    expect(trustProxy('10.0.0.0/8, 192.168.1.7,loopback, fd00::/8')).toEqual(['10.0.0.0/8', '192.168.1.7', 'loopback', 'fd00::/8']);
  });

  it('refuses "true" at start-up, saying why and what to write instead', () => {
    for (const value of ['true', 'TRUE', ' true ']) {
      expect(() => trustProxy(value)).toThrow(ConfigError);
      expect(() => trustProxy(value)).toThrow(/LOUPE_TRUST_PROXY: .*every X-Forwarded-For entry.*any client could choose its own address.*number of proxies.*\(e\.g\. 1\).*addresses/);
    }
  });

  it('refuses an entry that is not an address, CIDR or preset, naming it', () => {
    expect(() => trustProxy('10.0.0.0/33')).toThrow(/LOUPE_TRUST_PROXY: .*invalid range on address: 10\.0\.0\.0\/33/);
    expect(() => trustProxy('proxy.internal')).toThrow(/LOUPE_TRUST_PROXY: .*invalid IP address: proxy\.internal/);
    expect(() => trustProxy('10.0.0.1,,10.0.0.2')).toThrow(/LOUPE_TRUST_PROXY: .*empty entry/);
    expect(() => trustProxy('-1')).toThrow(ConfigError);
  });
});

describe('LOUPE_SECRET', () => {
  const secret = (value?: string) => loadConfig(value === undefined ? {} : { LOUPE_SECRET: value }).secret;

  it('is unset by default (the server then uses the one kept in its database)', () => {
    expect(secret()).toBeUndefined();
  });

  it('takes at least 32 bytes written as hex or base64url, as the text given', () => {
    expect(secret('a1'.repeat(32))).toBe('a1'.repeat(32));
    expect(secret('Zm9v_-Ab'.repeat(5) + 'xyz')).toBe('Zm9v_-Ab'.repeat(5) + 'xyz');
    expect(secret('A'.repeat(43) + '=')).toBe('A'.repeat(43) + '=');
  });

  it('refuses a short or malformed secret at start-up without repeating it', () => {
    for (const value of ['a1'.repeat(31), 'short', 'A'.repeat(42), 'has spaces in it and is long enough to pass a length check only', 'x'.repeat(1025)]) {
      let message = '';
      try {
        secret(value);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message, value).toMatch(/LOUPE_SECRET: must be at least 32 random bytes written as hex \(64 or more digits\) or base64url \(43 or more characters\)/);
      expect(message).not.toContain(value);
    }
  });
});

describe('LOUPE_WEBHOOK_RETRY_SCHEDULE', () => {
  const schedule = (value?: string) => loadConfig(value === undefined ? {} : { LOUPE_WEBHOOK_RETRY_SCHEDULE: value }).webhooks.retrySchedule;

  it('defaults to the contract schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    expect(schedule()).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
  });

  it('takes comma-separated durations in ms, s, m or h', () => {
    expect(schedule('100ms, 2s,3m,1h')).toEqual([100, 2_000, 180_000, 3_600_000]);
  });

  it('refuses anything else at start-up, naming the variable', () => {
    for (const value of ['5', '5d', '1s,,2s', '-1s', '1.5s', '200h', `${'1s,'.repeat(50)}1s`]) {
      expect(() => schedule(value), value).toThrow(/LOUPE_WEBHOOK_RETRY_SCHEDULE: must be comma-separated durations/);
    }
  });
});
