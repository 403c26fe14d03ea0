// Whether this browser has a font that draws colour emoji. Without one (a server without emoji
// fonts, some Linux desktops) an emoji shows as an empty box, so the reactions show their names.

/** The emoji fonts of the common systems, before the page's own text fonts. */
export const EMOJI_FONTS = "'Apple Color Emoji', 'Segoe UI Emoji', 'Noto Color Emoji', 'Twemoji Mozilla', sans-serif";

let known: boolean | undefined;

/** Draws an emoji on a small canvas and looks for a coloured pixel: a missing glyph's box has none. */
export function drawsColourEmoji(): boolean {
  if (known !== undefined) return known;
  try {
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 24;
    const context = canvas.getContext('2d', { willReadFrequently: true });
    if (!context) return (known = true);
    context.textBaseline = 'top';
    context.font = `20px ${EMOJI_FONTS}`;
    context.fillStyle = '#000';
    context.fillText('👍', 0, 0);
    const pixels = context.getImageData(0, 0, 24, 24).data;
    known = false;
    for (let at = 0; at < pixels.length; at += 4) {
      const [red, green, blue, alpha] = [pixels[at]!, pixels[at + 1]!, pixels[at + 2]!, pixels[at + 3]!];
      if (alpha > 0 && (Math.abs(red - green) > 30 || Math.abs(green - blue) > 30 || Math.abs(red - blue) > 30)) return (known = true);
    }
    return known;
  } catch {
    return (known = true);
  }
}
