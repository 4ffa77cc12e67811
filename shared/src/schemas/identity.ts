import { Type, type Static } from '@sinclair/typebox';
import { BOOTSTRAP_SERVERS_PATTERN } from '../connectors/fields.js';
import { Page, PageQuery, Timestamp, Uuid } from './common.js';

// Spec 2.2–2.5 and 4.1–4.3: users, environments, teams and their memberships.

const Email = Type.String({ format: 'email', maxLength: 320 });
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const UserRead = Type.Object(
  {
    id: Uuid,
    email: Email,
    is_active: Type.Boolean({ default: true }),
    is_superuser: Type.Boolean({ default: false }),
    is_verified: Type.Boolean({ default: false }),
    active_env_id: Nullable(Uuid),
  },
  { $id: 'UserRead', additionalProperties: false },
);
export type UserRead = Static<typeof UserRead>;
export const UserPage = Page(UserRead, 'Page_UserRead');

export const UserCreate = Type.Object(
  {
    email: Email,
    password: Type.String(),
    is_active: Type.Optional(Nullable(Type.Boolean({ default: true }))),
    is_superuser: Type.Optional(Type.Boolean({ default: false })),
    is_verified: Type.Optional(Nullable(Type.Boolean({ default: false }))),
  },
  { $id: 'UserCreate', additionalProperties: false },
);
export type UserCreate = Static<typeof UserCreate>;

export const UserSafeUpdate = Type.Object(
  {
    password: Type.Optional(Nullable(Type.String())),
    email: Type.Optional(Nullable(Email)),
    is_active: Type.Optional(Nullable(Type.Boolean())),
    is_superuser: Type.Optional(Nullable(Type.Boolean())),
    is_verified: Type.Optional(Nullable(Type.Boolean())),
    active_env_id: Type.Optional(Nullable(Uuid)),
  },
  { $id: 'UserSafeUpdate', additionalProperties: false },
);
export type UserSafeUpdate = Static<typeof UserSafeUpdate>;

export const UserPasswordChange = Type.Object(
  { old_password: Type.String(), new_password: Type.String() },
  { $id: 'UserPasswordChange', additionalProperties: false },
);
export type UserPasswordChange = Static<typeof UserPasswordChange>;

export const UserListQuery = Type.Composite([PageQuery, Type.Object({ email: Type.Optional(Email) })]);

// --- authentication bodies (4.1) ---
export const LoginForm = Type.Object(
  {
    username: Type.String({ minLength: 1 }),
    password: Type.String({ minLength: 1 }),
    grant_type: Type.Optional(Type.String({ pattern: '^password$' })),
    scope: Type.Optional(Type.String({ default: '' })),
    client_id: Type.Optional(Nullable(Type.String())),
    client_secret: Type.Optional(Nullable(Type.String())),
  },
  { $id: 'LoginForm', additionalProperties: false },
);
export type LoginForm = Static<typeof LoginForm>;

export const BearerResponse = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('bearer'),
    expires_in: Type.Integer({ minimum: 1 }),
  },
  { $id: 'BearerResponse', additionalProperties: false },
);
export type BearerResponse = Static<typeof BearerResponse>;
export const EmailBody = Type.Object({ email: Email }, { $id: 'EmailBody', additionalProperties: false });
export const ResetPasswordBody = Type.Object(
  { token: Type.String({ minLength: 1 }), password: Type.String() },
  { $id: 'ResetPasswordBody', additionalProperties: false },
);
export const VerifyBody = Type.Object(
  { token: Type.String({ minLength: 1 }) },
  { $id: 'VerifyBody', additionalProperties: false },
);

// --- environments (2.4) ---
export const SECURITY_PROTOCOLS = ['PLAINTEXT', 'SASL_PLAINTEXT', 'SASL_SSL', 'SSL'] as const;
export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'GSSAPI', 'OAUTHBEARER'] as const;
const SASL_PROTOCOLS = SECURITY_PROTOCOLS.filter((p) => p.startsWith('SASL'));
/** The mechanisms that authenticate with a user name and a password. */
export const USER_PASSWORD_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;

/**
 * The environment's broker and its retention (spec 2.4 leaves the shape to us).
 * `sasl_password` is the one secret: stored encrypted, read back as `<redacted>`.
 */
const BootstrapServers = Type.String({
  minLength: 1,
  maxLength: 2048,
  pattern: BOOTSTRAP_SERVERS_PATTERN,
  description: 'Comma-separated host:port list of the Kafka brokers',
});

export const RetentionConfiguration = Type.Object(
  {
    bootstrap_servers: BootstrapServers,
    security_protocol: Type.Optional(
      Type.Union(
        SECURITY_PROTOCOLS.map((p) => Type.Literal(p)),
        { default: 'PLAINTEXT' },
      ),
    ),
    sasl_mechanism: Type.Optional(Nullable(Type.Union(SASL_MECHANISMS.map((m) => Type.Literal(m))))),
    sasl_username: Type.Optional(Nullable(Type.String({ maxLength: 1024 }))),
    sasl_password: Type.Optional(
      Nullable(Type.String({ maxLength: 4096, description: 'Secret: write-only' })),
    ),
    ca_cert: Type.Optional(Nullable(Type.String({ maxLength: 65536, description: 'PEM CA certificate' }))),
    retention_ms: Type.Optional(
      Type.Integer({ minimum: -1, description: 'Topic retention; -1 keeps forever' }),
    ),
    retention_bytes: Type.Optional(Type.Integer({ minimum: -1 })),
  },
  { $id: 'RetentionConfiguration', additionalProperties: false },
);
export type RetentionConfiguration = Static<typeof RetentionConfiguration>;

/**
 * The broker settings as a client writes them: `bootstrap_server`, the name
 * clients of the existing product send, is accepted for `bootstrap_servers`
 * (one of the two, not both). The gateway's validation moves it to
 * `bootstrap_servers` (`x-aliases`, gateway/src/http/validation.ts), so
 * handlers and storage see one name.
 */
export const RetentionConfigurationInput = Type.Unsafe<RetentionConfiguration>({
  ...Type.Object(
    {
      ...RetentionConfiguration.properties,
      bootstrap_servers: Type.Optional(BootstrapServers),
      bootstrap_server: Type.Optional({
        ...BootstrapServers,
        description: 'Another name of bootstrap_servers (send one of the two)',
      }),
    },
    { additionalProperties: false },
  ),
  $id: 'RetentionConfigurationInput',
  anyOf: [{ required: ['bootstrap_servers'] }, { required: ['bootstrap_server'] }],
  not: { required: ['bootstrap_servers', 'bootstrap_server'] },
  // SASL's fields, required together as the gateway checks them: a SASL
  // protocol needs its mechanism; PLAIN and SCRAM need a user and a password
  // (`<redacted>` keeps the stored one).
  allOf: [
    {
      if: { properties: { security_protocol: { enum: SASL_PROTOCOLS } }, required: ['security_protocol'] },
      then: { required: ['sasl_mechanism'], properties: { sasl_mechanism: { type: 'string' } } },
    },
    {
      if: {
        properties: {
          security_protocol: { enum: SASL_PROTOCOLS },
          sasl_mechanism: { enum: USER_PASSWORD_MECHANISMS },
        },
        required: ['security_protocol', 'sasl_mechanism'],
      },
      then: {
        required: ['sasl_username', 'sasl_password'],
        properties: {
          sasl_username: { type: 'string', minLength: 1 },
          sasl_password: { type: 'string', minLength: 1 },
        },
      },
    },
  ],
  'x-aliases': { bootstrap_server: 'bootstrap_servers' },
});

const envFields = {
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Optional(Nullable(Type.String({ maxLength: 4096 }))),
  use_retention: Type.Optional(Type.Boolean({ default: false })),
  retention_configuration: Type.Optional(Nullable(RetentionConfigurationInput)),
};
export const EnvCreate = Type.Object(envFields, {
  $id: 'EnvCreate',
  additionalProperties: false,
  // The retention is stored on the environment's broker: it needs the broker settings.
  allOf: [
    {
      if: { properties: { use_retention: { const: true } }, required: ['use_retention'] },
      then: {
        required: ['retention_configuration'],
        properties: { retention_configuration: { type: 'object' } },
      },
    },
  ],
});
export type EnvCreate = Static<typeof EnvCreate>;
export const EnvUpdate = Type.Partial(Type.Object(envFields), {
  $id: 'EnvUpdate',
  additionalProperties: false,
});
export type EnvUpdate = Static<typeof EnvUpdate>;
export const EnvRead = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    description: Nullable(Type.String()),
    use_retention: Type.Boolean(),
    retention_configuration: Nullable(RetentionConfiguration),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'EnvRead', additionalProperties: false },
);
export type EnvRead = Static<typeof EnvRead>;
export const EnvPage = Page(EnvRead, 'Page_EnvRead');

// --- teams (2.5) ---
const teamFields = {
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Optional(Nullable(Type.String({ maxLength: 4096 }))),
};
export const TeamCreate = Type.Object(teamFields, { $id: 'TeamCreate', additionalProperties: false });
export type TeamCreate = Static<typeof TeamCreate>;
export const TeamUpdate = Type.Partial(Type.Object(teamFields), {
  $id: 'TeamUpdate',
  additionalProperties: false,
});
export type TeamUpdate = Static<typeof TeamUpdate>;
export const TeamRead = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    description: Nullable(Type.String()),
    env_id: Uuid,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'TeamRead', additionalProperties: false },
);
export type TeamRead = Static<typeof TeamRead>;
export const TeamPage = Page(TeamRead, 'Page_TeamRead');
export const TEAM_ROLES = ['owner', 'member'] as const;
export type TeamRole = (typeof TEAM_ROLES)[number];
export const TeamMember = Type.Object(
  { id: Uuid, email: Email, role: Type.Union(TEAM_ROLES.map((r) => Type.Literal(r))) },
  { $id: 'TeamMember', additionalProperties: false },
);
export type TeamMember = Static<typeof TeamMember>;
export const TeamMemberList = Type.Array(TeamMember, { $id: 'TeamMemberList' });
export const BulkMembers = Type.Object(
  { members: Type.Array(Uuid, { minItems: 1, maxItems: 1000, uniqueItems: true }) },
  { $id: 'BulkMembers', additionalProperties: false },
);
/** Teams live in one environment: the caller's active one unless `env_id` names another. */
export const EnvScopeQuery = Type.Object({ env_id: Type.Optional(Uuid) });
export const NameQuery = Type.Object({ name: Type.String({ minLength: 1 }) });

// --- export / import (2.3) ---
export const ExportData = Type.Object(
  {
    users: Type.Array(UserRead),
    envs: Type.Array(
      Type.Object(
        {
          id: Uuid,
          name: Type.String({ minLength: 1, maxLength: 255 }),
          use_retention: Type.Boolean(),
          retention_configuration: Nullable(RetentionConfiguration),
          description: Type.Optional(Nullable(Type.String({ maxLength: 4096 }))),
        },
        { additionalProperties: false },
      ),
    ),
    teams: Type.Array(
      Type.Object(
        {
          id: Uuid,
          name: Type.String({ minLength: 1, maxLength: 255 }),
          description: Nullable(Type.String({ maxLength: 4096 })),
          env_id: Nullable(Uuid),
        },
        { additionalProperties: false },
      ),
    ),
    env_members: Type.Array(
      Type.Object({ user_id: Uuid, env_id: Uuid, admin: Type.Boolean() }, { additionalProperties: false }),
    ),
    team_members: Type.Array(
      Type.Object({ user_id: Uuid, team_id: Uuid, admin: Type.Boolean() }, { additionalProperties: false }),
    ),
  },
  { $id: 'ExportData', additionalProperties: false },
);
export type ExportData = Static<typeof ExportData>;

// --- service-account tokens and organisation API keys (our design; docs/api.md) ---
export const ServiceAccountTokenCreate = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    team_id: Type.Optional(Uuid),
    expires_in_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650, default: 365 })),
  },
  { $id: 'ServiceAccountTokenCreate', additionalProperties: false },
);
export type ServiceAccountTokenCreate = Static<typeof ServiceAccountTokenCreate>;
export const ServiceAccountTokenRead = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    user_id: Uuid,
    env_id: Uuid,
    team_id: Nullable(Uuid),
    created_at: Timestamp,
    expires_at: Timestamp,
    revoked: Type.Boolean(),
  },
  { $id: 'ServiceAccountTokenRead', additionalProperties: false },
);
export const ServiceAccountTokenCreated = Type.Object(
  {
    ...ServiceAccountTokenRead.properties,
    access_token: Type.String(),
    token_type: Type.Literal('bearer'),
  },
  { $id: 'ServiceAccountTokenCreated', additionalProperties: false },
);
export const ServiceAccountTokenList = Type.Array(ServiceAccountTokenRead, {
  $id: 'ServiceAccountTokenList',
});

export const ApiKeyCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    env_ids: Type.Array(Uuid, { minItems: 1, maxItems: 1000, uniqueItems: true }),
    admin: Type.Optional(Type.Boolean({ default: false, description: 'Grant environment-admin rights' })),
  },
  { $id: 'ApiKeyCreate', additionalProperties: false },
);
export type ApiKeyCreate = Static<typeof ApiKeyCreate>;
export const ApiKeyRead = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    prefix: Type.String({ description: 'First characters of the key, to recognise it' }),
    env_ids: Type.Array(Uuid),
    admin: Type.Boolean(),
    created_at: Timestamp,
    last_used_at: Nullable(Timestamp),
    revoked: Type.Boolean(),
  },
  { $id: 'ApiKeyRead', additionalProperties: false },
);
export const ApiKeyCreated = Type.Object(
  { ...ApiKeyRead.properties, key: Type.String({ description: 'Shown once' }) },
  { $id: 'ApiKeyCreated', additionalProperties: false },
);
export const ApiKeyList = Type.Array(ApiKeyRead, { $id: 'ApiKeyList' });
export const ApiKeyLogin = Type.Object(
  { api_key: Type.String({ pattern: '^psk_' }) },
  { $id: 'ApiKeyLogin', additionalProperties: false },
);
