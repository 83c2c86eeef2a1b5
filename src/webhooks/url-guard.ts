import { BlockList, isIP } from 'node:net';
import type { Config } from '../libraries/config/config.js';

/**
 * Where production webhooks may go: public unicast addresses only. One classifier, used when a callback URL or a
 * key's webhook is accepted and again on every connection a delivery makes (the address actually dialled, after
 * DNS), so neither an IP literal nor a DNS answer that changes after acceptance can reach inside.
 */

/** IPv4 ranges that are not public unicast: RFC 6890 special-purpose, private, shared, multicast, reserved. */
const NON_PUBLIC_V4: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (CGNAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address 255.255.255.255
];

const NON_PUBLIC_4 = new BlockList();
for (const [network, prefix] of NON_PUBLIC_V4) NON_PUBLIC_4.addSubnet(network, prefix, 'ipv4');

/**
 * IPv6 outside global unicast 2000::/3 is refused (unspecified, loopback, unique-local fc00::/7, link-local,
 * site-local fec0::/10, multicast, discard 100::/64, and every form below that embeds an IPv4 address, unless the
 * embedded address is public). Inside 2000::/3, these are refused too.
 */
const NON_PUBLIC_6 = new BlockList();
for (const [network, prefix] of [
  // IETF protocol assignments, Teredo 2001::/32 among them: a Teredo address reaches an obfuscated client IPv4
  // through a relay; it is refused outright rather than decoded (Teredo is obsolete for servers)
  ['2001::', 23],
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation
] as const) {
  NON_PUBLIC_6.addSubnet(network, prefix, 'ipv6');
}
const GLOBAL_UNICAST_6 = new BlockList();
GLOBAL_UNICAST_6.addSubnet('2000::', 3, 'ipv6');

/** The address's 16 bytes, or null when it is not an IPv6 address. Handles `::` and a dotted IPv4 tail. */
export function ipv6Bytes(address: string): Uint8Array | null {
  if (isIP(address) !== 6) return null;
  let text = address.replace(/%.*$/, '').toLowerCase();
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = tail.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const groupsOf = (part: string): string[] => (part === '' ? [] : part.split(':'));
  const left = groupsOf(head);
  const right = rest === undefined ? [] : groupsOf(rest);
  const groups = rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const bytes = new Uint8Array(16);
  groups.forEach((group, index) => {
    const value = parseInt(group, 16);
    bytes[index * 2] = value >> 8;
    bytes[index * 2 + 1] = value & 0xff;
  });
  return bytes;
}

function dotted(bytes: Uint8Array, at: number): string {
  return `${bytes[at]}.${bytes[at + 1]}.${bytes[at + 2]}.${bytes[at + 3]}`;
}

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return prefix.every((byte, index) => bytes[index] === byte);
}

const ZEROS_10 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

/**
 * The IPv4 address an IPv6 address carries and leads to, for the forms that embed one: IPv4-mapped ::ffff:0:0/96,
 * IPv4-translated ::ffff:0:0:0/96, IPv4-compatible ::/96, NAT64 64:ff9b::/96 and 6to4 2002::/16.
 */
export function embeddedIpv4(bytes: Uint8Array): string | null {
  if (startsWith(bytes, [...ZEROS_10, 0xff, 0xff])) return dotted(bytes, 12);
  if (startsWith(bytes, [0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0])) return dotted(bytes, 12);
  if (startsWith(bytes, [...ZEROS_10, 0, 0])) return dotted(bytes, 12);
  if (startsWith(bytes, [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0])) return dotted(bytes, 12);
  if (startsWith(bytes, [0x20, 0x02])) return dotted(bytes, 2);
  return null;
}

/** True for an address a production webhook may reach: public unicast, judged by the IPv4 an IPv6 form embeds. */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 4) return !NON_PUBLIC_4.check(bare, 'ipv4');
  const bytes = ipv6Bytes(bare);
  if (family !== 6 || bytes === null) return false;
  const embedded = embeddedIpv4(bytes);
  if (embedded !== null) return isPublicAddress(embedded);
  return GLOBAL_UNICAST_6.check(bare, 'ipv6') && !NON_PUBLIC_6.check(bare, 'ipv6');
}

export type WebhookUrlPolicy = {
  /** Production: only public addresses. */
  readonly publicAddressesOnly: boolean;
  /** Embedded mode (and tests): plain http://localhost receivers are accepted too. */
  readonly allowHttpLocalhost: boolean;
};

/** Where webhooks may go: production only public addresses over https; the sandbox also http://localhost when allowed. */
export function webhookUrlPolicyOf(config: Config): WebhookUrlPolicy {
  const production = config.environment === 'production';
  return {
    publicAddressesOnly: production,
    allowHttpLocalhost: !production && (config.mode === 'embedded' || config.webhooks.allowHttpLocalhost),
  };
}

export type HostLookup = (host: string) => Promise<readonly string[]>;

// a host part right after `//`, then no whitespace anywhere
const ABSOLUTE_HTTPS = /^https:\/\/[^\s/?#]\S*$/i;
const ABSOLUTE_HTTP = /^http:\/\/[^\s/?#]\S*$/i;
const LOCALHOST_NAMES: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

/**
 * The written form a webhook URL must have: an absolute `https://` URL as written (URL() would forgive `https:host`
 * and surrounding spaces), without credentials; when the policy allows it, also plain `http://` to localhost,
 * 127.0.0.1 or [::1]. Synchronous: a send's validation reports it beside its other fields.
 */
export function hasWebhookUrlForm(text: string, policy: Pick<WebhookUrlPolicy, 'allowHttpLocalhost'>): boolean {
  if (!ABSOLUTE_HTTPS.test(text) && !(policy.allowHttpLocalhost && ABSOLUTE_HTTP.test(text))) return false;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  if (url.username !== '' || url.password !== '') return false;
  // Only https:// (whose host URL() requires) and, when allowed, http:// got past the patterns above.
  return url.protocol === 'https:' || LOCALHOST_NAMES.includes(url.hostname);
}

/** Why a URL is not an acceptable form, as a field message (the same words for a send and for the CLI). */
export function webhookUrlFormMessage(policy: Pick<WebhookUrlPolicy, 'allowHttpLocalhost'>): string {
  return policy.allowHttpLocalhost ? 'must be an absolute https:// (or http://localhost) URL' : 'must be an absolute https:// URL';
}

export type WebhookUrlVerdict =
  { readonly accepted: true } | { readonly accepted: false; readonly refusal: 'form' | 'address'; readonly message: string };

/**
 * The one rule deciding where webhooks may go, applied alike to a send's `callback_url` (POST /send) and to a
 * key's webhook (`keys set-webhook`), with the policy of the same settings (`webhookUrlPolicyOf`): the written
 * form, then, under the public-only policy, every address the host resolves to.
 */
export async function checkWebhookUrl(
  text: string,
  policy: WebhookUrlPolicy,
  lookup: HostLookup = defaultLookup,
): Promise<WebhookUrlVerdict> {
  if (!hasWebhookUrlForm(text, policy)) return { accepted: false, refusal: 'form', message: webhookUrlFormMessage(policy) };
  if (policy.publicAddressesOnly && !(await resolvesToPublicAddresses(text, lookup))) {
    return { accepted: false, refusal: 'address', message: 'must resolve to public internet addresses only' };
  }
  return { accepted: true };
}

/** Resolves the URL's host and tells whether every address is public (production's rule at acceptance). */
export async function resolvesToPublicAddresses(url: string, lookup: HostLookup = defaultLookup): Promise<boolean> {
  let hostname: string;
  try {
    hostname = new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return false;
  }
  if (isIP(hostname) !== 0) return isPublicAddress(hostname);
  try {
    const addresses = await lookup(hostname);
    return addresses.length > 0 && addresses.every(isPublicAddress);
  } catch {
    return false;
  }
}

async function defaultLookup(host: string): Promise<readonly string[]> {
  const { lookup } = await import('node:dns/promises');
  return (await lookup(host, { all: true })).map((a) => a.address);
}
