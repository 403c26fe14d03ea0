import { hash, verify } from '@node-rs/argon2';
import { invalid } from '../domain/errors.ts';

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

export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

let dummy: Promise<string> | undefined;

/**
 * Checks a password against a stored hash. With no hash (an unknown user, or one without a
 * password) it is checked against a fixed hash made with the same parameters, so that both cases
 * cost one hash and answer in the same time; the answer is then false.
 */
export async function passwordMatches(password: string, stored: string | null): Promise<boolean> {
  if (stored === null) {
    await verify(await (dummy ??= hash('loupe: no such user or no password')), password).catch(() => false);
    return false;
  }
  return verify(stored, password).catch(() => false);
}
