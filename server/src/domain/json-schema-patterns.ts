import type { CodeOptions } from 'ajv';
import { RE2JS } from 're2js';

type RegExpEngine = NonNullable<CodeOptions['regExp']>;
type RegExpLike = ReturnType<RegExpEngine>;

// `pattern` and `patternProperties` of an annotation spec are written by any member and run on
// every feedback value, so they run on RE2 (re2js, a pure-JS port): time linear in the input,
// whatever the pattern. V8's backtracking engine took 107 s for /^(a+)+$/ on forty "a" and a "!";
// RE2 takes well under a millisecond. What RE2 cannot run (lookaround, backreferences) is refused.

/** A pattern of a field_schema that Loupe will not run; the message names the pattern. */
export class PatternError extends Error {}

/**
 * An Ajv `code.regExp` engine for one compile. It refuses more than `maxPatterns` distinct
 * patterns: each one is tested against every key (patternProperties) or string it covers, so
 * their number multiplies the cost of a value (about 27 ms per pattern for 100,000 keys).
 */
export function linearRegExpEngine(maxPatterns: number): RegExpEngine {
  const seen = new Set<string>();
  const engine = (pattern: string, flags: string): RegExpLike => {
    seen.add(pattern);
    if (seen.size > maxPatterns) throw new PatternError(`has more than ${maxPatterns} distinct patterns (pattern and patternProperties)`);
    return linearRegExp(pattern, flags);
  };
  // Only read when generating standalone code, which Loupe never does.
  engine.code = 'linearRegExp';
  return engine;
}

/** Compiles an ECMAScript pattern (as JSON Schema writes them) for RE2, or throws a PatternError. */
export function linearRegExp(pattern: string, flags = 'u'): RegExpLike {
  const name = JSON.stringify(pattern);
  try {
    // Parsing only: V8 compiles a RegExp on its first match, and this one is never matched.
    new RegExp(pattern, 'u');
  } catch {
    throw new PatternError(`pattern ${name} is not a valid ECMAScript regular expression`);
  }
  // RE2JS.translateRegExp reads `\k` outside the u flag's rules, as a plain "k": refuse it first.
  if (hasNamedBackreference(pattern)) throw new PatternError(`pattern ${name} uses a backreference, which the linear-time engine (RE2) does not support`);
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (error) {
    const detail = (error as Error).message.replace(/^error parsing regexp: /, '');
    throw new PatternError(`pattern ${name} cannot run on the linear-time engine (RE2; no lookaround or backreferences): ${detail}`);
  }
  // Ajv keys its scope by toString(): the same pattern and flags share one compiled RegExp.
  const regExp = { test: (input: string) => compiled.test(input), toString: () => `/${pattern}/${flags}` };
  return regExp;
}

/** Whether `\k` stands as an escape (not after an escaped backslash) anywhere in the pattern. */
function hasNamedBackreference(pattern: string): boolean {
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] !== '\\') continue;
    if (pattern[i + 1] === 'k') return true;
    i++;
  }
  return false;
}
