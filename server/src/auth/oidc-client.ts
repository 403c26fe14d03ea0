import * as client from 'openid-client';
import type { OidcSettings } from '../config.ts';
import type { OidcAttempt } from './oidc-state.ts';
import { STATE_LIFETIME_MS } from './oidc-state.ts';

// This server as an OpenID Connect client (contract 5.12): the authorization code flow with PKCE
// (S256), `state` and `nonce`, through openid-client. The provider's metadata is fetched on first
// use and kept (an hour), never at start-up: a provider that is down stops sign-ins, not the server.

/** How long discovered metadata is kept before the next attempt fetches it again. */
const DISCOVERY_TTL_MS = 3_600_000;
const SCOPE = 'openid profile email';

/** Why an attempt ends without a sign-in: an HTTP status and a sentence for the person. */
export class OidcRefusal extends Error {
  readonly status: 400 | 401 | 403 | 429 | 502;

  constructor(status: OidcRefusal['status'], reason: string, options?: { cause?: unknown }) {
    super(reason, options);
    this.name = 'OidcRefusal';
    this.status = status;
  }
}

/** The provider's word on who signed in: its `sub`, the claims of the ID token (and userinfo when the ID token lacked some). */
export type OidcIdentity = { issuer: string; subject: string; claims: Record<string, unknown> };

export class OidcClient {
  readonly #settings: OidcSettings;
  #discovered: { config: Promise<client.Configuration>; at: number } | undefined;

  constructor(settings: OidcSettings) {
    this.#settings = settings;
  }

  /** The provider's metadata: one fetch shared by the requests waiting for it; a failure is not kept. */
  #configuration(): Promise<client.Configuration> {
    const now = Date.now();
    if (this.#discovered && now - this.#discovered.at < DISCOVERY_TTL_MS) return this.#discovered.config;
    const { issuer, clientId, clientSecret, timeoutMs } = this.#settings;
    const config = client.discovery(new URL(issuer), clientId, clientSecret, client.ClientSecretBasic(clientSecret), {
      timeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
      // An http:// issuer is the operator's choice (a provider on the same host or network).
      execute: new URL(issuer).protocol === 'http:' ? [client.allowInsecureRequests] : [],
    });
    const entry = { config, at: now };
    this.#discovered = entry;
    config.catch(() => {
      if (this.#discovered === entry) this.#discovered = undefined;
    });
    return config;
  }

  /** A new attempt: the provider's authorization URL to send the person to, and what to keep until they return. */
  async start({ redirectUri, returnTo }: { redirectUri: string; returnTo: string }): Promise<{ url: string; attempt: OidcAttempt }> {
    const config = await this.#configuration().catch((error: unknown) => {
      throw unreachable(error);
    });
    const verifier = client.randomPKCECodeVerifier();
    const attempt: OidcAttempt = {
      verifier,
      state: client.randomState(),
      nonce: client.randomNonce(),
      redirectUri,
      returnTo,
      expiresAt: Date.now() + STATE_LIFETIME_MS,
    };
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: SCOPE,
      response_type: 'code',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: attempt.state,
      nonce: attempt.nonce,
    });
    return { url: url.href, attempt };
  }

  /**
   * Finishes an attempt with the parameters the provider sent the person back with: redeems the
   * code (PKCE verifier, this client's credentials) and verifies the ID token (issuer, audience =
   * this client, nonce, expiry). Throws OidcRefusal.
   */
  async finish(attempt: OidcAttempt, search: URLSearchParams): Promise<OidcIdentity> {
    const config = await this.#configuration().catch((error: unknown) => {
      throw unreachable(error);
    });
    const current = new URL(attempt.redirectUri);
    current.search = search.toString();
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: attempt.verifier,
        expectedState: attempt.state,
        expectedNonce: attempt.nonce,
        idTokenExpected: true,
      });
    } catch (error) {
      throw refusalOf(error);
    }
    const idToken = tokens.claims();
    if (!idToken) throw new OidcRefusal(401, 'The sign-in provider sent no ID token.');
    const claims: Record<string, unknown> = { ...idToken };
    const { roleClaim } = this.#settings;
    const lacking = claims[roleClaim] === undefined || (claims.preferred_username === undefined && claims.email === undefined);
    if (lacking && config.serverMetadata().userinfo_endpoint && tokens.access_token) {
      try {
        // The userinfo answer must be about the ID token's subject (checked by fetchUserInfo).
        const info = await client.fetchUserInfo(config, tokens.access_token, idToken.sub);
        for (const [name, value] of Object.entries(info)) if (claims[name] === undefined) claims[name] = value;
      } catch (error) {
        throw refusalOf(error);
      }
    }
    return { issuer: idToken.iss, subject: idToken.sub, claims };
  }
}

function unreachable(error: unknown): OidcRefusal {
  return new OidcRefusal(502, `The sign-in provider could not be reached or gave no usable answer (${describe(error)}); try again later.`, { cause: error });
}

/** A failure of the code's redemption or of the checks: the provider said no (401), or it could not be asked (502). */
function refusalOf(error: unknown): OidcRefusal {
  if (error instanceof OidcRefusal) return error;
  if (error instanceof client.AuthorizationResponseError) {
    return new OidcRefusal(401, `The sign-in provider did not sign you in (${clip(error.error)}${error.error_description ? `: ${clip(error.error_description)}` : ''}).`, { cause: error });
  }
  if (error instanceof client.ResponseBodyError) {
    if (error.status >= 500) return unreachable(error);
    return new OidcRefusal(401, `The sign-in provider refused the sign-in code (${clip(error.error)}${error.error_description ? `: ${clip(error.error_description)}` : ''}); start again.`, { cause: error });
  }
  if (error instanceof client.WWWAuthenticateChallengeError) return new OidcRefusal(401, 'The sign-in provider refused this server\'s credentials.', { cause: error });
  if (isTransportFailure(error)) return unreachable(error);
  // openid-client's checks of the answer: ID token issuer, audience, nonce, expiry, state.
  return new OidcRefusal(401, `The sign-in provider's answer failed verification (${describe(error)}); start again.`, { cause: error });
}

function isTransportFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return true;
  if (error instanceof TypeError && /fetch failed/i.test(error.message)) return true;
  const code = (error as { code?: unknown }).code;
  // A status or content the client did not expect (an HTML error page, a 5xx without a JSON body).
  return code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' || code === 'OAUTH_RESPONSE_IS_NOT_JSON' || code === 'OAUTH_PARSE_ERROR';
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return 'unknown error';
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'timed out';
  const cause = error.cause instanceof Error ? error.cause : undefined;
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (error instanceof TypeError && typeof code === 'string') return code;
  return clip(error.message);
}

const clip = (text: string) => (text.length > 200 ? `${text.slice(0, 200)}…` : text);
