import { createHash } from 'node:crypto';

const TWO_TO_64 = 2 ** 64;

/**
 * Where (rule, call) falls in [0, 1): the first 8 bytes of SHA-256 of `<rule id>:<call id>` as an
 * unsigned integer over 2^64. The same pair gives the same number in every process and on every
 * retry, and the numbers of different calls are spread evenly (contract 5.10).
 */
export function samplePoint(ruleId: string, callId: string): number {
  const digest = createHash('sha256').update(`${ruleId}:${callId}`).digest();
  // A double holds 53 bits: the division rounds, and a point of exactly 1 is rounded down below it.
  return Math.min(Number(digest.readBigUInt64BE(0)) / TWO_TO_64, 1 - Number.EPSILON);
}

/** Whether a rule of this rate takes this call: its point falls below the rate (a rate of 1 takes every call). */
export function isSampled(ruleId: string, callId: string, sampleRate: number): boolean {
  return sampleRate >= 1 || samplePoint(ruleId, callId) < sampleRate;
}
