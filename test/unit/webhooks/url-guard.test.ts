import { expect } from 'chai';
import { checkWebhookUrl, embeddedIpv4, ipv6Bytes, isPublicAddress, resolvesToPublicAddresses } from '../../../src/webhooks/url-guard.js';

/** Each form the production policy refuses, with the range it falls in. */
const REFUSED: readonly (readonly [string, string])[] = [
  ['127.0.0.1', 'IPv4 loopback'],
  ['127.255.255.254', 'IPv4 loopback, end of range'],
  ['0.0.0.0', 'IPv4 unspecified'],
  ['10.1.2.3', 'private 10/8'],
  ['172.16.0.1', 'private 172.16/12'],
  ['172.31.255.255', 'private 172.16/12, end'],
  ['192.168.1.1', 'private 192.168/16'],
  ['169.254.169.254', 'link-local (cloud metadata)'],
  ['100.64.0.1', 'CGNAT 100.64/10'],
  ['100.127.255.255', 'CGNAT, end'],
  ['192.0.0.8', 'IETF protocol assignments'],
  ['192.0.2.10', 'documentation TEST-NET-1'],
  ['198.51.100.7', 'documentation TEST-NET-2'],
  ['203.0.113.9', 'documentation TEST-NET-3'],
  ['198.18.0.1', 'benchmarking'],
  ['192.88.99.1', '6to4 relay anycast'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast (SSDP)'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  ['::', 'IPv6 unspecified'],
  ['::1', 'IPv6 loopback'],
  ['fc00::1', 'unique-local fc00::/7'],
  ['fd12:3456::1', 'unique-local fd00::/8'],
  ['fe80::1', 'link-local'],
  ['fec0::1', 'site-local fec0::/10'],
  ['feff::1', 'site-local, end'],
  ['ff02::1', 'multicast'],
  ['100::1', 'discard-only'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback, dotted'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
  ['::ffff:a00:1', 'IPv4-mapped private'],
  ['::ffff:0:7f00:1', 'IPv4-translated loopback'],
  ['::127.0.0.1', 'IPv4-compatible loopback'],
  ['::7f00:1', 'IPv4-compatible loopback, hex'],
  ['::a9fe:a9fe', 'IPv4-compatible link-local'],
  ['64:ff9b::7f00:1', 'NAT64 of loopback'],
  ['64:ff9b::192.168.0.1', 'NAT64 of private, dotted'],
  ['64:ff9b:1::808:808', 'local-use NAT64 64:ff9b:1::/48'],
  ['2002:7f00:1::', '6to4 of loopback'],
  ['2002:a00:1::1', '6to4 of private'],
  ['2002:c0a8:101::1', '6to4 of 192.168.1.1'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo (refused whatever its client)'],
  ['2001:0:5ef5:79fd:0:0:80fe:fffe', 'Teredo with a public-looking obfuscated client'],
  ['2001:db8::1', 'documentation 2001:db8::/32'],
  ['3fff::1', 'documentation 3fff::/20'],
  ['2001:2::1', 'benchmarking (IETF 2001::/23)'],
  ['not-an-address', 'not an IP at all'],
];

const ACCEPTED: readonly (readonly [string, string])[] = [
  ['8.8.8.8', 'public IPv4'],
  ['1.1.1.1', 'public IPv4'],
  ['100.128.0.1', 'just past CGNAT'],
  ['172.32.0.1', 'just past 172.16/12'],
  ['169.255.0.1', 'just past link-local'],
  ['2606:4700:4700::1111', 'public IPv6'],
  ['2a00:1450:4007:80f::200e', 'public IPv6'],
  ['::ffff:8.8.8.8', 'IPv4-mapped public'],
  ['64:ff9b::808:808', 'NAT64 of a public IPv4'],
  ['2002:808:808::1', '6to4 of a public IPv4'],
  ['[2606:4700:4700::1111]', 'bracketed as in a URL'],
];

describe('webhook address policy: which addresses production may dial', () => {
  for (const [address, range] of REFUSED) {
    it(`refuses ${address} (${range})`, () => {
      expect(isPublicAddress(address)).to.equal(false);
    });
  }

  for (const [address, range] of ACCEPTED) {
    it(`accepts ${address} (${range})`, () => {
      expect(isPublicAddress(address)).to.equal(true);
    });
  }

  it('reads every spelling of an IPv6 address to the same bytes', () => {
    const loopbackMapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1];
    expect([...ipv6Bytes('::ffff:127.0.0.1')!]).to.deep.equal(loopbackMapped);
    expect([...ipv6Bytes('::FFFF:7F00:1')!]).to.deep.equal(loopbackMapped);
    expect([...ipv6Bytes('0:0:0:0:0:ffff:7f00:0001')!]).to.deep.equal(loopbackMapped);
    expect(ipv6Bytes('127.0.0.1')).to.equal(null);
  });

  it('finds the IPv4 each embedding form leads to, and none in a plain IPv6 address', () => {
    expect(embeddedIpv4(ipv6Bytes('64:ff9b::c633:6407')!)).to.equal('198.51.100.7');
    expect(embeddedIpv4(ipv6Bytes('2002:cb00:7109::1')!)).to.equal('203.0.113.9');
    expect(embeddedIpv4(ipv6Bytes('::ffff:0:a00:1')!)).to.equal('10.0.0.1');
    expect(embeddedIpv4(ipv6Bytes('2606:4700:4700::1111')!)).to.equal(null);
  });

  describe('at acceptance, a URL is judged by its literal or by every address its host resolves to', () => {
    const resolver = (answers: Record<string, readonly string[]>) => (host: string) => {
      const found = answers[host];
      return found ? Promise.resolve(found) : Promise.reject(new Error(`ENOTFOUND ${host}`));
    };
    const lookup = resolver({
      'hooks.example': ['93.184.216.34'],
      'mixed.example': ['93.184.216.34', '10.0.0.5'],
      'v6.example': ['fd00::5'],
    });

    it('refuses each literal form the URL parser normalises (::127.0.0.1, NAT64, 6to4, site-local, numeric IPv4)', async () => {
      for (const url of [
        'https://127.0.0.1:8443/hooks',
        'https://[::127.0.0.1]/hooks',
        'https://[::ffff:127.0.0.1]/hooks',
        'https://[64:ff9b::7f00:1]/hooks',
        'https://[2002:7f00:1::]/hooks',
        'https://[fec0::1]/hooks',
        'https://2130706433/hooks',
        'https://0x7f.1/hooks',
      ]) {
        expect(await resolvesToPublicAddresses(url, lookup), url).to.equal(false);
      }
    });

    it('refuses a host when any of its addresses is not public, or when it does not resolve', async () => {
      expect(await resolvesToPublicAddresses('https://mixed.example/hooks', lookup)).to.equal(false);
      expect(await resolvesToPublicAddresses('https://v6.example/hooks', lookup)).to.equal(false);
      expect(await resolvesToPublicAddresses('https://unknown.example/hooks', lookup)).to.equal(false);
    });

    it('accepts a host whose addresses are all public, and a public literal', async () => {
      expect(await resolvesToPublicAddresses('https://hooks.example/hooks', lookup)).to.equal(true);
      expect(await resolvesToPublicAddresses('https://[2606:4700:4700::1111]/hooks', lookup)).to.equal(true);
    });
  });

  describe('checkWebhookUrl (a send callback_url and a key webhook alike)', () => {
    const lookup = (host: string) => (host === 'hooks.example' ? Promise.resolve(['93.184.216.34']) : Promise.resolve(['10.0.0.5']));
    const production = { publicAddressesOnly: true, allowHttpLocalhost: false };
    const sandbox = { publicAddressesOnly: false, allowHttpLocalhost: false };
    const localhostAllowed = { publicAddressesOnly: false, allowHttpLocalhost: true };

    it('refuses the written form first, with the words of the policy', async () => {
      expect(await checkWebhookUrl('http://localhost:4000/hooks', sandbox, lookup)).to.deep.equal({
        accepted: false,
        refusal: 'form',
        message: 'must be an absolute https:// URL',
      });
      expect(await checkWebhookUrl('https://user:pw@hooks.example/x', localhostAllowed, lookup)).to.deep.equal({
        accepted: false,
        refusal: 'form',
        message: 'must be an absolute https:// (or http://localhost) URL',
      });
    });

    it('accepts http://localhost only where the policy allows it', async () => {
      expect(await checkWebhookUrl('http://localhost:4000/hooks', localhostAllowed, lookup)).to.deep.equal({ accepted: true });
      expect(await checkWebhookUrl('http://127.0.0.1:4000/hooks', localhostAllowed, lookup)).to.deep.equal({ accepted: true });
    });

    it('under the public-only policy, refuses a host resolving inside and accepts a public one', async () => {
      expect(await checkWebhookUrl('https://inside.example/hooks', production, lookup)).to.deep.equal({
        accepted: false,
        refusal: 'address',
        message: 'must resolve to public internet addresses only',
      });
      expect(await checkWebhookUrl('https://hooks.example/hooks', production, lookup)).to.deep.equal({ accepted: true });
      // outside it, addresses are not looked at
      expect(await checkWebhookUrl('https://inside.example/hooks', sandbox, lookup)).to.deep.equal({ accepted: true });
    });
  });
});
