// A real OpenID Provider for tests/sso: the OpenID-certified `oidc-provider` package, with its
// own sign-in and consent pages (devInteractions: any password is taken; the account must be in
// the accounts file). Started by tests/sso/provider.py as `node provider.mjs CONFIG.json`.
//
// CONFIG: { port, issuer, clients: [...], jwks: { keys: [...] }, accountsFile }
// The accounts file ({ login: { name, email, groups } }) is read again at every look-up, so a
// test takes a person out of a group, or out of the company, by rewriting it.
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));

function accounts() {
  return JSON.parse(readFileSync(config.accountsFile, 'utf8'));
}

const provider = new Provider(config.issuer, {
  clients: config.clients,
  jwks: config.jwks,
  async findAccount(ctx, id) {
    const person = accounts()[id];
    if (!person) return undefined; // gone: sign-in and refresh are refused
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          preferred_username: id,
          name: person.name,
          email: person.email,
          email_verified: true,
          groups: person.groups,
        };
      },
    };
  },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  scopes: ['openid', 'offline_access', 'email', 'profile', 'groups'],
  // The claims asked for by scope go into the ID token too, as most company providers do.
  conformIdTokenClaims: false,
  // A refresh token for every client allowed the grant, offline_access asked or not.
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
  ttl: config.ttl || {},
  cookies: { keys: ['antidote-tests-only-cookie-key'] },
});

provider.listen(config.port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${config.issuer}`);
});
