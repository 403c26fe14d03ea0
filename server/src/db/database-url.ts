// A PostgreSQL DATABASE_URL may carry a password, in its user info or as a `password` (or
// `sslpassword`) query parameter. Nothing the service prints shows it: the URL is shown masked,
// and texts that could quote it (errors, log lines) have every form of the password replaced.

const MASK = '***';
const SECRET_PARAMETERS = ['password', 'sslpassword'];

function parsed(url: string): URL | undefined {
  return url.startsWith('sqlite:') || !URL.canParse(url) ? undefined : new URL(url);
}

/** The URL to show: its password, wherever it is, replaced by `***`. */
export function maskedDatabaseUrl(url: string): string {
  if (url.startsWith('sqlite:')) return url;
  const u = parsed(url);
  if (!u) {
    // Not a URL a driver could use either; hide everything between the scheme and the host.
    return url.replace(/\/\/.*@/, `//${MASK}@`).replace(/([?&](?:ssl)?password=)[^&]*/gi, `$1${MASK}`);
  }
  if (u.password) u.password = MASK;
  for (const name of [...u.searchParams.keys()]) {
    if (SECRET_PARAMETERS.includes(name.toLowerCase())) u.searchParams.set(name, MASK);
  }
  return u.toString();
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The password as written in the URL's text (the URL parser re-encodes some characters). */
function writtenPassword(url: string): string {
  const authority = /^[^:]+:\/\/([^/?#]*)/.exec(url)?.[1] ?? '';
  const at = authority.lastIndexOf('@');
  const userInfo = at < 0 ? '' : authority.slice(0, at);
  const colon = userInfo.indexOf(':');
  return colon < 0 ? '' : userInfo.slice(colon + 1);
}

/** Each form in which the URL's password could appear in a text: as written, decoded, encoded. */
function secretsOf(url: string): string[] {
  const raw: string[] = [];
  const u = parsed(url);
  if (u) {
    raw.push(u.password);
    for (const [name, value] of u.searchParams) if (SECRET_PARAMETERS.includes(name.toLowerCase())) raw.push(value);
    raw.push(writtenPassword(url));
  } else {
    raw.push(/\/\/[^:@/]*:(.*)@/.exec(url)?.[1] ?? '');
    for (const match of url.matchAll(/[?&](?:ssl)?password=([^&]*)/gi)) raw.push(match[1]!);
  }
  const forms = new Set<string>();
  for (const secret of raw.filter(Boolean)) {
    forms.add(secret);
    forms.add(decoded(secret));
    forms.add(encodeURIComponent(decoded(secret)));
    forms.add(JSON.stringify(decoded(secret)).slice(1, -1)); // inside a JSON log line
  }
  forms.delete('');
  // Longest first, so that a form containing another is replaced whole.
  return [...forms].sort((a, b) => b.length - a.length);
}

/** A function that masks, in any text, the URL itself and every form of its password. */
export function secretMasker(url: string | undefined): (text: string) => string {
  if (!url || url.startsWith('sqlite:')) return (text) => text;
  const masked = maskedDatabaseUrl(url);
  const secrets = secretsOf(url);
  if (!secrets.length) return (text) => text;
  return (text) => {
    let out = text.includes(url) ? text.replaceAll(url, masked) : text;
    for (const secret of secrets) if (out.includes(secret)) out = out.replaceAll(secret, MASK);
    return out;
  };
}
