/**
 * A site's look (docs/channels.md "The site's look"): colours, font and corner radius, read by
 * name (the widget's `data-*` attributes, the page's `tai_*` link parameters) and set as the
 * stylesheet's custom properties (`--tai-<name>`) on `root` with `style.setProperty`, which a CSP
 * without 'unsafe-inline' allows. Colours are checked for WCAG AA text contrast (4.5:1) on every
 * pair the stylesheet draws as text on a colour; when a pair fails, the site's colours are refused
 * together (a console warning names each of the failing pair's) and the defaults stand. Small on
 * purpose: it ships in widget.js.
 */

const COLORS = ["accent", "accent-text", "background", "text"];
/** The stylesheet's light colours, by COLORS' order (webchat/chat.css): what a site's colours are laid over. */
const LIGHT = ["#0b5cad", "#ffffff", "#ffffff", "#1b1f24"];
/** Text drawn on a colour, as [text, colour] indexes of COLORS: the transcript, a sent bubble and buttons, chips and links. */
const PAIRS = [
  [3, 2],
  [1, 0],
  [0, 2],
];
const AA = 4.5;

function rgb(hex: string): number[] {
  const h = hex.length < 5 ? hex.replace(/\w/g, "$&$&") : hex;
  return [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
}

/** WCAG's relative luminance. */
function luminance(c: number[]): number {
  return c.reduce((sum, v, i) => {
    const s = v / 255;
    return sum + [0.2126, 0.7152, 0.0722][i] * (s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4);
  }, 0);
}

/** The WCAG contrast ratio of two colours, 1 to 21. */
export function contrast(a: number[], b: number[]): number {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

/** `a` mixed into `b` at `share`, as the stylesheet's `color-mix(in srgb, …)` does. */
function mix(a: number[], b: number[], share: number): number[] {
  return a.map((v, i) => v * share + b[i] * (1 - share));
}

/**
 * Applies what `read` gives by name (accent, accent-text, background, text, font, radius) to
 * `root`. `warn` gets a refused name and why; a value is never echoed.
 */
export function applyTheme(root: HTMLElement, read: (name: string) => string | null, warn: (name: string, why: string) => void): void {
  const set = (name: string, value: string) => root.style.setProperty(`--tai-${name}`, value);
  const site = COLORS.map((name) => {
    const v = read(name);
    if (v && !/^#([\da-f]{3}){1,2}$/i.test(v)) warn(name, "ignored: not #rgb or #rrggbb");
    else return v;
  });
  const color = (i: number) => rgb(site[i] || LIGHT[i]);
  // A failing pair refuses the site's whole palette, not just the pair: half a palette over the
  // defaults could fail another pair, and would not be the site's look either.
  let refused = false;
  for (const pair of PAIRS)
    if (contrast(color(pair[0]), color(pair[1])) < AA)
      for (const i of pair)
        if (site[i]) {
          refused = true;
          warn(COLORS[i], `refused: contrast under ${AA}:1`);
        }
  if (!refused && site.some(Boolean)) {
    // A site's colours hold in dark mode too (chat.css leaves a .tai-site palette alone).
    root.classList.add("tai-site");
    COLORS.forEach((name, i) => set(name, site[i] || LIGHT[i]));
    const [text, bg] = [color(3), color(2)];
    root.style.setProperty("color-scheme", luminance(bg) < 0.2 ? "dark" : "light");
    // The muted shade (times, hints, the status line) is mixed from text and background; where
    // their contrast leaves it under AA on the header's panel, it is the text colour itself.
    if (contrast(mix(text, bg, 0.7), mix(text, bg, 0.04)) < AA) set("muted", "var(--tai-text)");
  }
  const font = read("font");
  if (font && /^[^;{}()<>\\]{1,200}$/.test(font)) set("font", font);
  else if (font) warn("font", "ignored: not a font-family list");
  const radius = read("radius");
  if (radius && /^\d{1,2}$/.test(radius) && +radius <= 24) set("radius", `${radius}px`);
  else if (radius) warn("radius", "ignored: not 0 to 24");
}
