import { Type, type TObject, type TProperties, type TSchema } from '@sinclair/typebox';
import { secretField } from './secret.js';

// Building blocks of the connector configuration schemas. Each field carries
// its title, description and default in the schema itself: the form fields of
// `GET /connector-types/` are derived from it, never written twice.

/** A string restricted to `values`, as a plain JSON Schema `enum` (one error, a clear list). */
export const StringEnum = <const T extends readonly string[]>(
  values: T,
  opts: { default?: T[number]; description?: string; title?: string } = {},
) => Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...opts });

export const hostField = (what: string) =>
  Type.String({ minLength: 1, maxLength: 253, description: `Host name or IP address of the ${what}` });

export const portField = (defaultPort: number, what: string) =>
  Type.Integer({ minimum: 1, maximum: 65535, default: defaultPort, description: `TCP port of the ${what}` });

export const userField = (what: string) =>
  Type.String({ minLength: 1, maxLength: 255, description: `User name on the ${what}` });

export const passwordField = (what: string) => secretField(`Password of the user on the ${what}`);

/** A PEM certificate (public, not a secret). */
export const pemField = (description: string) => Type.String({ minLength: 1, maxLength: 65536, description });

/**
 * A TCP port, 0–65535, as text. Checked here because a client library handed
 * a larger number throws from inside its socket handling, out of reach of
 * the caller's error handling.
 */
export const PORT_PATTERN =
  '([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';

/** Comma-separated `host:port` list, the same rule as the environment's broker (spec 2.4). */
export const BOOTSTRAP_SERVERS_PATTERN = `^[A-Za-z0-9._\\-\\[\\]:]+:${PORT_PATTERN}(,[A-Za-z0-9._\\-\\[\\]:]+:${PORT_PATTERN})*$`;
/** Kafka's own rule for topic names. */
export const TOPIC_PATTERN = '^[A-Za-z0-9._-]{1,249}$';
/** `qualifier.name`: one dot between two non-empty parts without blanks. */
export const QUALIFIED_NAME_PATTERN = '^[^.\\s]+\\.[^.\\s]+$';

/**
 * The capture list of a change-data-capture source (spec 2.7, key `whitelist`).
 * Never empty (spec 4.5 rule 5); each entry becomes a data model.
 */
export const whitelistField = (entry: string, example: string, what = 'Tables') =>
  Type.Array(Type.String({ minLength: 3, maxLength: 255, pattern: QUALIFIED_NAME_PATTERN }), {
    minItems: 1,
    maxItems: 10000,
    uniqueItems: true,
    description: `${what} to capture, each as ${entry} (e.g. ${example}); one data model per entry`,
  });

/**
 * What `ssh_host_key` accepts: the bastion's public key as an OpenSSH line
 * (`ssh-ed25519 AAAA… [comment]`, optionally after a host name as
 * `ssh-keyscan` prints it) or its SHA-256 fingerprint as `ssh-keygen -lf`
 * prints it (`SHA256:` and 43 base64 characters).
 */
export const SSH_HOST_KEY_PATTERN =
  '^\\s*(SHA256:[A-Za-z0-9+/]{43}=?|(\\S+\\s+)?(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521))\\s+[A-Za-z0-9+/]+={0,2}(\\s+.*)?)\\s*$';

/** The SSH bastion of database connections (spec 2.14; docs/ssh-tunnels.md). */
export const sshTunnelFields = () => ({
  ssh_host: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 253,
      description:
        'SSH bastion to tunnel the database connection through; no tunnel when absent. The host and port of the database are then as the bastion sees them',
    }),
  ),
  ssh_port: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 65535, default: 22, description: 'SSH port of the bastion' }),
  ),
  ssh_user: Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, description: 'User on the SSH bastion' }),
  ),
  ssh_private_key: Type.Optional(
    secretField(
      'Base64-encoded private key of the SSH user: Ed25519, ECDSA or RSA, in OpenSSH or PEM (PKCS#1, SEC1, PKCS#8) encoding',
      {
        title: 'SSH private key',
        // `<redacted>` stands for the stored key (a PATCH, a check with ?connector_id=).
        inline: { pattern: '^(<redacted>|[A-Za-z0-9+/=\\r\\n]+)$' },
      },
    ),
  ),
  ssh_private_key_passphrase: Type.Optional(
    secretField('Passphrase of the SSH private key, when it is encrypted', {
      title: 'SSH private key passphrase',
    }),
  ),
  ssh_host_key: Type.Optional(
    Type.String({
      maxLength: 16384,
      pattern: SSH_HOST_KEY_PATTERN,
      title: 'SSH host key',
      description:
        "The bastion's expected host key: its public key line (e.g. the content of /etc/ssh/ssh_host_ed25519_key.pub) or its SHA-256 fingerprint as `ssh-keygen -lf` prints it (SHA256:…). Required to connect: without it the connection is refused and the error names the fingerprint the bastion presented",
    }),
  ),
});
/** With a bastion, its user and key are needed. */
export const SSH_DEPENDENCIES = { ssh_host: ['ssh_user', 'ssh_private_key'] };

const ACRONYMS: Record<string, string> = {
  api: 'API',
  ca: 'CA',
  ccsid: 'CCSID',
  cdc: 'CDC',
  hmac: 'HMAC',
  id: 'ID',
  json: 'JSON',
  ms: '(ms)',
  pdb: 'PDB',
  sasl: 'SASL',
  smt: 'SMT',
  srv: 'SRV',
  ssh: 'SSH',
  ssl: 'SSL',
  tls: 'TLS',
  url: 'URL',
};

/** `ssh_private_key` → `SSH private key`. */
export function humanize(name: string): string {
  const words = name.split('_').map((w) => ACRONYMS[w] ?? w);
  const first = words[0] ?? '';
  words[0] = first.charAt(0).toUpperCase() + first.slice(1);
  return words.join(' ');
}

export interface ConfigSchemaOptions {
  title: string;
  description: string;
  /** Cross-field rules: `if`/`then` blocks. */
  allOf?: TSchema[];
  dependentRequired?: Record<string, string[]>;
}

/**
 * The `json_configuration` schema of one type: a closed object whose
 * properties all get a title (derived from the name unless given).
 */
export function configSchema<T extends TProperties>(
  id: string,
  props: T,
  opts: ConfigSchemaOptions,
): TObject<T> {
  const titled = Object.fromEntries(
    Object.entries(props).map(([name, schema]) => [
      name,
      { ...schema, title: schema.title ?? humanize(name) },
    ]),
  ) as T;
  return Type.Object(titled, {
    $id: id,
    title: opts.title,
    description: opts.description,
    additionalProperties: false,
    ...(opts.allOf ? { allOf: opts.allOf } : {}),
    ...(opts.dependentRequired ? { dependentRequired: opts.dependentRequired } : {}),
  });
}

/** `then` = these fields are required when `field` is one of `values`. */
export function requiredWhen(
  field: string,
  values: readonly string[],
  required: string[],
  absentMatches = false,
): TSchema {
  return {
    if: {
      properties: { [field]: { enum: [...values] } },
      ...(absentMatches ? {} : { required: [field] }),
    },
    then: { required },
  } as unknown as TSchema;
}
