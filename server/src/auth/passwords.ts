import { hash, verify } from '@node-rs/argon2';
import { DomainError, invalid } from '../domain/errors.ts';
import { WorkSlots } from '../domain/work-slots.ts';

// Passwords are hashed with argon2id by @node-rs/argon2 (a maintained binding of the reference
// implementation, prebuilt for each platform as npm packages, so nothing is compiled or downloaded
// at install). Its defaults are the parameters OWASP recommends for argon2id (19 MiB of memory, 2
// passes, 1 lane) and are used as they are, in production and in tests alike: argon2id is the
// winner of the Password Hashing Competition, and its memory cost is what scrypt would need tuning for.

export const MIN_PASSWORD_LENGTH = 12;
const MAX_PASSWORD_LENGTH = 1024;

let common: Promise<Set<string>> | undefined;

/**
 * The common passwords of zxcvbn-ts's list (about 49,000, from breach corpora), lower-cased.
 * Loaded on first use: parsing the list takes a few hundred ms, which every start of the server
 * and of the admin tool would pay otherwise.
 */
function commonPasswords(): Promise<Set<string>> {
  return (common ??= import('@zxcvbn-ts/language-common').then(({ dictionary }) => new Set(dictionary['passwords-common'].map((word) => word.toLowerCase()))));
}

/** A new password must be at least 12 characters and not one of the common ones (400 otherwise). */
export async function checkNewPassword(password: string): Promise<void> {
  if ([...password].length < MIN_PASSWORD_LENGTH) throw invalid(`The password must be at least ${MIN_PASSWORD_LENGTH} characters long.`);
  if (password.length > MAX_PASSWORD_LENGTH) throw invalid(`The password must be at most ${MAX_PASSWORD_LENGTH} characters long.`);
  if ((await commonPasswords()).has(password.toLowerCase())) throw invalid('The password is one of the most common passwords; choose another.');
}

/**
 * Two password hashes at a time, and at most 32 waiting. A hash holds 19 MiB and one of libuv's four
 * threads for tens of milliseconds, and anyone may ask for one (an unknown username costs a hash
 * too): two at a time leave the pool's other threads to DNS lookups (webhook deliveries), files
 * and zlib (OTLP bodies), and a bounded queue keeps a flood of sign-ins from many clients, each
 * under the brake's limit, from growing the process's memory and every sign-in's wait without end.
 */
const hashSlots = new WorkSlots(2, { maxWaiting: 32 });
const busy = () => new DomainError('unavailable', 'The server is checking as many passwords as it can at once; retry shortly.');

let hashesRun = 0;

/** Hashes and verifications this process has run (each sign-in one, an unknown user's too): /metrics. */
export const passwordHashesRun = (): number => hashesRun;

/** Runs one hash or verification in a slot; 503 when the line is full. */
const inHashSlot = <T>(work: () => Promise<T>): Promise<T> =>
  hashSlots.run(() => work().finally(() => hashesRun++), { refuse: busy });

export function hashPassword(password: string): Promise<string> {
  return inHashSlot(() => hash(password));
}

let dummy: Promise<string> | undefined;

/**
 * Checks a password against a stored hash. With no hash (an unknown user, or one without a
 * password) it is checked against a fixed hash made with the same parameters, so that both cases
 * cost one hash and answer in the same time; the answer is then false.
 */
export async function passwordMatches(password: string, stored: string | null): Promise<boolean> {
  if (stored === null) {
    const fixed = await (dummy ??= hash('loupe: no such user or no password'));
    await inHashSlot(() => verify(fixed, password).catch(() => false));
    return false;
  }
  return inHashSlot(() => verify(stored, password).catch(() => false));
}
