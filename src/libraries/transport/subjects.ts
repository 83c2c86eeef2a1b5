/**
 * NATS subject filters: tokens separated by `.`, `*` matches exactly one token, `>` (last token only) matches one
 * or more remaining tokens (a `>` elsewhere is an ordinary token). Both transports select deliveries with the same rules.
 */

export function subjectMatches(filter: string, subject: string): boolean {
  const wanted = filter.split('.');
  const actual = subject.split('.');
  for (let i = 0; i < wanted.length; i++) {
    const token = wanted[i];
    if (token === '>' && i === wanted.length - 1) return actual.length > i && actual.slice(i).every((t) => t !== '');
    const got = actual[i];
    if (got === undefined) return false;
    if (token === '*' ? got === '' : token !== got) return false;
  }
  return actual.length === wanted.length;
}

const REGEX_SPECIAL = /[\\^$.|?*+()[\]{}]/g;

/**
 * The same filter as an anchored POSIX regular expression, so that SQL (`subject ~ pattern`) selects exactly what
 * `subjectMatches` does.
 */
export function subjectPattern(filter: string): string {
  const tokens = filter.split('.');
  const parts = tokens.map((token, i) => {
    if (token === '>' && i === tokens.length - 1) return '[^.]+(\\.[^.]+)*';
    if (token === '*') return '[^.]+';
    return token.replace(REGEX_SPECIAL, '\\$&');
  });
  return `^${parts.join('\\.')}$`;
}
