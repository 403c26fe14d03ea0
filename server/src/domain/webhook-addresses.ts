import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { invalid } from './errors.ts';

// Server-side request forgery (contract 5.13): a webhook's url must not lead the server to
// itself, its network or the cloud's metadata service. The url's scheme is checked when it is
// stored; its host's addresses at that time and again at every attempt (the sender connects to
// the address checked there, without a second lookup: webhooks/webhook-sender.ts).

/** The addresses a host name resolves to (node:dns's lookup with `all`, or one a test controls). */
export type ResolveHost = (hostname: string) => Promise<{ address: string; family: number }[]>;

/** What the settings allow: http:// urls, and addresses that are not public. */
export type UrlPolicy = { allowHttp: boolean; allowPrivate: boolean };

/** ipaddr.js's names of special-purpose ranges, as a reason says them. */
const RANGE_NAMES: Record<string, string> = {
  unspecified: 'an unspecified address',
  broadcast: 'a broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address (169.254.0.0/16 holds the cloud metadata service)',
  loopback: 'a loopback address',
  carrierGradeNat: 'a shared (carrier-grade NAT) address',
  private: 'a private address',
  uniqueLocal: 'a unique-local address',
  reserved: 'a reserved address',
};

/**
 * Why an address may not be connected to, or null for a public unicast one. IPv4 written inside
 * IPv6 (::ffff:127.0.0.1) is judged as the IPv4 address it is; every special-purpose range that
 * ipaddr.js knows (translation prefixes, 6to4, Teredo, documentation) is refused with the others.
 */
export function addressRefusal(address: string): string | null {
  if (!ipaddr.isValid(address)) return `"${address}" is not an IP address`;
  const parsed = ipaddr.process(address);
  const range = parsed.range();
  if (range === 'unicast') return null;
  return `${parsed.toString()} is ${RANGE_NAMES[range] ?? `a special-purpose address (${range})`}`;
}

/** The url's host without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** A webhook url as stored: absolute, https (or http when allowed), without credentials or fragment. */
export function checkWebhookUrl(text: string, { allowHttp }: Pick<UrlPolicy, 'allowHttp'>): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid('url is not an absolute URL.');
  }
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:')) {
    throw invalid(`url must be https://${allowHttp ? ' or http://' : ' (http:// is accepted only when the server sets LOUPE_WEBHOOK_ALLOW_HTTP=true)'}.`);
  }
  if (url.username || url.password) throw invalid('url must not hold credentials (user:password@): authenticate deliveries by their signature.');
  if (url.hash) throw invalid('url must not have a fragment (#…): it is never sent.');
  return url;
}

/**
 * The host's addresses, every one of them public unless private ones are allowed; else an error
 * whose message says which address and why. A host written as an address is not looked up.
 */
export async function publicAddresses(url: URL, { resolve, allowPrivate }: { resolve: ResolveHost; allowPrivate: boolean }): Promise<{ address: string; family: number }[]> {
  const host = hostOf(url);
  let addresses: { address: string; family: number }[];
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      throw new AddressRefused(`${host} could not be resolved (${(error as NodeJS.ErrnoException).code ?? 'lookup failed'})`);
    }
    if (!addresses.length) throw new AddressRefused(`${host} resolves to no address`);
  }
  if (allowPrivate) return addresses;
  for (const { address } of addresses) {
    const refusal = addressRefusal(address);
    if (refusal) {
      throw new AddressRefused(
        `${isIP(host) ? '' : `${host} resolves to ${address}: `}${refusal}, refused (LOUPE_WEBHOOK_ALLOW_PRIVATE=true allows it)`,
      );
    }
  }
  return addresses;
}

/** A host that may not be connected to, or that could not be resolved; the message says why. */
export class AddressRefused extends Error {}

/** At creation and update: the url's checks, with a refused address as a 400 that says why. */
export async function checkWebhookTarget(text: string, policy: UrlPolicy & { resolve: ResolveHost }): Promise<string> {
  const url = checkWebhookUrl(text, policy);
  try {
    await publicAddresses(url, { resolve: policy.resolve, allowPrivate: policy.allowPrivate });
  } catch (error) {
    if (error instanceof AddressRefused) throw invalid(`url: ${error.message}.`);
    throw error;
  }
  return text;
}
