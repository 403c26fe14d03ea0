import { hash } from 'node:crypto';

const TWO_TO_32 = 2 ** 32;
const TWO_TO_64 = 2 ** 64;

/**
 * Where (rule, call) falls in [0, 1): the first 8 bytes of SHA-256 of `<rule id>:<call id>` as an
 * unsigned integer over 2^64. The same pair gives the same number in every process and on every
 * retry, and the numbers of different calls are spread evenly (contract 5.10).
 */
export function samplePoint(ruleId: string, callId: string): number {
  // The one-shot hash as hex, its first 16 digits read as two 32-bit halves: a third of the time of
  // createHash().update().digest() per call, and the same double as the 64-bit integer rounded.
  const hex = hash('sha256', `${ruleId}:${callId}`);
  const value = Number.parseInt(hex.slice(0, 8), 16) * TWO_TO_32 + Number.parseInt(hex.slice(8, 16), 16);
  // A double holds 53 bits: the division rounds, and a point of exactly 1 is rounded down below it.
  return Math.min(value / TWO_TO_64, 1 - Number.EPSILON);
}

/** Whether a rule of this rate takes this call: its point falls below the rate (a rate of 1 takes every call). */
export function isSampled(ruleId: string, callId: string, sampleRate: number): boolean {
  return sampleRate >= 1 || samplePoint(ruleId, callId) < sampleRate;
}
