import { createRequire } from 'node:module';

// Reactions: membership in the Unicode RGI emoji set comes from the engine's own Unicode data
// (`\p{RGI_Emoji}`, a property of strings: skin-tone and ZWJ sequences are one emoji); names come
// from emojibase-data's CLDR labels. Loaded on first use: most servers never see a reaction.

const RGI_EMOJI = /^\p{RGI_Emoji}$/v;
const SKIN_TONE = /[\u{1F3FB}-\u{1F3FF}]/u;
const PRESENTATION_SELECTORS = /[\uFE0E\uFE0F]/g;

type EmojibaseEntry = { label: string; emoji: string; skins?: EmojibaseEntry[] };
type Known = { label: string; base: EmojibaseEntry };

let index: Map<string, Known> | undefined;

/** Emojibase writes some emoji with a selector that RGI does not; compare without selectors. */
const key = (emoji: string) => emoji.replace(PRESENTATION_SELECTORS, '');

function load(): Map<string, Known> {
  const entries = createRequire(import.meta.url)('emojibase-data/en/data.json') as EmojibaseEntry[];
  const map = new Map<string, Known>();
  for (const entry of entries) {
    map.set(key(entry.emoji), { label: entry.label, base: entry });
    for (const skin of entry.skins ?? []) map.set(key(skin.emoji), { label: skin.label, base: entry });
  }
  return map;
}

/** Symbols that are a whole word of a label (`keycap: #`, `keycap: *`): their Unicode names. */
const SYMBOL_WORDS: Record<string, string> = { '#': 'number sign', '*': 'asterisk' };

/** `thumbs up: medium skin tone` → `:thumbs_up_medium_skin_tone:`; `keycap: #` → `:keycap_number_sign:` */
export function aliasOf(label: string): string {
  const snake = label
    .replace(/[#*]/g, (symbol) => ` ${SYMBOL_WORDS[symbol]} `)
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '');
  return `:${snake}:`;
}

/** The RGI spelling of an emojibase emoji (with or without its presentation selector). */
function rgiForm(emoji: string): string {
  const bare = key(emoji);
  return RGI_EMOJI.test(bare) ? bare : emoji;
}

export type Reaction = { emoji: string; alias: string; detoned: string; detoned_alias: string };

// Reactions repeat a small set of emoji, and the RGI test is a costly pattern: answers are kept.
// No emoji is longer than MAX_EMOJI_LENGTH code units; longer text is refused before the cache,
// so the cache holds at most MAX_ANSWERS short strings whatever clients send.
const answers = new Map<string, Reaction | null>();
const MAX_ANSWERS = 10_000;
const MAX_EMOJI_LENGTH = 64;

/** The enriched reaction for a string that is exactly one RGI emoji, or null. */
export function describeEmoji(text: string): Reaction | null {
  if (text.length > MAX_EMOJI_LENGTH) return null;
  let answer = answers.get(text);
  if (answer === undefined) {
    answer = describe(text);
    if (answers.size >= MAX_ANSWERS) answers.clear();
    answers.set(text, answer);
  }
  return answer;
}

function describe(text: string): Reaction | null {
  if (!RGI_EMOJI.test(text)) return null;
  index ??= load();
  const known = index.get(key(text));
  if (!known) return null;
  const hasTone = SKIN_TONE.test(text);
  const detoned = hasTone ? rgiForm(known.base.emoji) : text;
  return {
    emoji: text,
    alias: aliasOf(known.label),
    detoned,
    detoned_alias: aliasOf(hasTone ? known.base.label : known.label),
  };
}
