import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { describeEmoji } from '../../../server/src/domain/emoji.ts';

// Reactions (contract 4.3): exactly one grapheme of the Unicode RGI emoji set, enriched with its
// CLDR short name as :snake_case:, the detoned form and its alias.

const tags = (letters: string) => [...letters].map((c) => String.fromCodePoint(0xe0000 + c.codePointAt(0)!)).join('');
const CANCEL_TAG = '\u{E007F}';
const ZWJ = '\u200D';
const VS16 = '\uFE0F';

describe('describeEmoji', () => {
  it('accepts a single emoji and names it', () => {
    expect(describeEmoji('👍')).toEqual({ emoji: '👍', alias: ':thumbs_up:', detoned: '👍', detoned_alias: ':thumbs_up:' });
    expect(describeEmoji('😀')).toEqual({ emoji: '😀', alias: ':grinning_face:', detoned: '😀', detoned_alias: ':grinning_face:' });
  });

  it('accepts keycaps in their RGI form (with U+FE0F) and refuses the bare or unqualified forms', () => {
    expect(describeEmoji(`1${VS16}\u20E3`)).toMatchObject({ emoji: '1️⃣', alias: ':keycap_1:', detoned: '1️⃣' });
    expect(describeEmoji(`#${VS16}\u20E3`)).toMatchObject({ emoji: '#️⃣', detoned: '#️⃣' });
    expect(describeEmoji(`*${VS16}\u20E3`)).toMatchObject({ emoji: '*️⃣', detoned: '*️⃣' });
    expect(describeEmoji('#\u20E3')).toBeNull(); // unqualified keycap: not RGI
    expect(describeEmoji('#')).toBeNull();
    expect(describeEmoji('1')).toBeNull();
  });

  it('accepts a flag (a pair of regional indicators) as one emoji; a lone indicator or an unassigned pair is not one', () => {
    expect(describeEmoji('🇫🇷')).toEqual({ emoji: '🇫🇷', alias: ':flag_france:', detoned: '🇫🇷', detoned_alias: ':flag_france:' });
    expect(describeEmoji('🇺🇳')).toMatchObject({ alias: ':flag_united_nations:' });
    expect(describeEmoji('🇺')).toBeNull();
    expect(describeEmoji('🇦🇦')).toBeNull();
    expect(describeEmoji('🇫🇷🇩🇪')).toBeNull();
  });

  it('accepts the RGI tag-sequence flags and refuses other tag sequences', () => {
    const scotland = `🏴${tags('gbsct')}${CANCEL_TAG}`;
    const england = `🏴${tags('gbeng')}${CANCEL_TAG}`;
    expect(describeEmoji(scotland)).toEqual({ emoji: scotland, alias: ':flag_scotland:', detoned: scotland, detoned_alias: ':flag_scotland:' });
    expect(describeEmoji(england)).toMatchObject({ alias: ':flag_england:' });
    expect(describeEmoji(`🏴${tags('usca')}${CANCEL_TAG}`)).toBeNull(); // well-formed but not RGI
    expect(describeEmoji(`🏴${tags('gbsct')}`)).toBeNull(); // no cancel tag
    expect(describeEmoji('🏴')).toMatchObject({ alias: ':black_flag:' });
  });

  it('accepts RGI ZWJ sequences as one emoji and refuses broken or non-RGI joins', () => {
    const family = ['👨', '👩', '👧', '👦'].join(ZWJ);
    expect(describeEmoji(family)).toEqual({ emoji: family, alias: ':family_man_woman_girl_boy:', detoned: family, detoned_alias: ':family_man_woman_girl_boy:' });
    expect(describeEmoji(`🏳${VS16}${ZWJ}🌈`)).toMatchObject({ alias: ':rainbow_flag:' });
    expect(describeEmoji(`👨${ZWJ}👩${ZWJ}`)).toBeNull(); // trailing joiner
    expect(describeEmoji(`${ZWJ}👍`)).toBeNull();
    expect(describeEmoji(`👍${ZWJ}👍`)).toBeNull(); // joined, but not an RGI sequence
    expect(describeEmoji(`🏳${ZWJ}🌈`)).toBeNull(); // rainbow flag without its U+FE0F: not the RGI form
  });

  it('accepts skin-tone variants and removes the tones in detoned', () => {
    expect(describeEmoji('👍🏽')).toEqual({ emoji: '👍🏽', alias: ':thumbs_up_medium_skin_tone:', detoned: '👍', detoned_alias: ':thumbs_up:' });
    expect(describeEmoji('👋🏿')).toEqual({ emoji: '👋🏿', alias: ':waving_hand_dark_skin_tone:', detoned: '👋', detoned_alias: ':waving_hand:' });
    expect(describeEmoji('👩🏽‍💻')).toEqual({
      emoji: '👩🏽‍💻',
      alias: ':woman_technologist_medium_skin_tone:',
      detoned: `👩${ZWJ}💻`,
      detoned_alias: ':woman_technologist:',
    });
    // Two different tones in one ZWJ sequence: one emoji, both tones removed.
    expect(describeEmoji('🧑🏽‍🤝‍🧑🏻')).toEqual({
      emoji: '🧑🏽‍🤝‍🧑🏻',
      alias: ':people_holding_hands_medium_skin_tone_light_skin_tone:',
      detoned: `🧑${ZWJ}🤝${ZWJ}🧑`,
      detoned_alias: ':people_holding_hands:',
    });
    // A toned base whose untoned form needs U+FE0F gets the RGI (fully qualified) detoned form.
    expect(describeEmoji('☝🏽')).toEqual({ emoji: '☝🏽', alias: ':index_pointing_up_medium_skin_tone:', detoned: `☝${VS16}`, detoned_alias: ':index_pointing_up:' });
    expect(describeEmoji('😀🏽')).toBeNull(); // a tone on a base that takes none
    expect(describeEmoji('👍🏽🏽')).toBeNull();
  });

  it('refuses text-presentation characters without U+FE0F and accepts their emoji presentation', () => {
    expect(describeEmoji('❤')).toBeNull();
    expect(describeEmoji(`❤${VS16}`)).toEqual({ emoji: '❤️', alias: ':red_heart:', detoned: '❤️', detoned_alias: ':red_heart:' });
    expect(describeEmoji('©')).toBeNull();
    expect(describeEmoji(`©${VS16}`)).toMatchObject({ alias: ':copyright:' });
    expect(describeEmoji('☝')).toBeNull();
    expect(describeEmoji('👍\uFE0E')).toBeNull(); // text presentation selector
  });

  it('refuses anything that is not exactly one emoji', () => {
    for (const text of ['', ' ', '👍👍', '👍😀', 'a👍', '👍a', ' 👍', '👍 ', '👍\n', 'a', 'é', ':thumbs_up:', '🇫🇷🇫🇷']) {
      expect(describeEmoji(text), JSON.stringify(text)).toBeNull();
    }
  });

  it('gives two different emoji two different aliases (keycaps # and * included)', () => {
    expect(describeEmoji(`#${VS16}\u20E3`)?.alias).toBe(':keycap_number_sign:');
    expect(describeEmoji(`*${VS16}\u20E3`)?.alias).toBe(':keycap_asterisk:');
    // Every emoji of the name data, in its RGI form, has an alias no other emoji has.
    const entries = createRequire(import.meta.url)('emojibase-data/en/data.json') as { emoji: string; skins?: { emoji: string }[] }[];
    const owners = new Map<string, string>();
    for (const entry of entries) {
      for (const { emoji } of [entry, ...(entry.skins ?? [])]) {
        const reaction = describeEmoji(emoji) ?? describeEmoji(emoji.replace(/\uFE0F/g, ''));
        if (!reaction) continue; // a lone regional indicator, say: not RGI
        expect(owners.get(reaction.alias) ?? reaction.emoji, reaction.alias).toBe(reaction.emoji);
        owners.set(reaction.alias, reaction.emoji);
      }
    }
    expect(owners.size).toBeGreaterThan(3500);
  });
});
