import { BlockList, isIP } from 'node:net';

/**
 * Where webhooks may go. Production refuses loopback, private, link-local and other non-public addresses (checked
 * on every connection, so a DNS answer that changes after validation cannot redirect a delivery inside).
 */
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

/** True for an address a production webhook may reach. IPv4-mapped IPv6 addresses are judged as IPv4. */
export function isPublicAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return isPublicAddress(mapped[1]);
  const family = isIP(address);
  if (family === 0) return false;
  return !NON_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export type WebhookUrlPolicy = {
  /** Production: only public addresses. */
  readonly publicAddressesOnly: boolean;
  /** Embedded mode (and tests): plain http://localhost receivers are accepted too. */
  readonly allowHttpLocalhost: boolean;
};

/** Resolves the URL's host and tells whether every address is public (production's rule at submission time). */
export async function resolvesToPublicAddresses(url: string, lookup: (host: string) => Promise<readonly string[]> = defaultLookup): Promise<boolean> {
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
