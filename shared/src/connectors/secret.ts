import { Type, type Static, type TSchema } from '@sinclair/typebox';

// Spec 2.14: every sensitive field takes either an inline value or a
// reference to a secret that already exists in the workers' namespace. The
// inner shape of the reference is ours; it is the Kubernetes `valueFrom`
// idiom (EnvVarSource.secretKeyRef), so a reference written here can be
// copied into a Deployment as is.

/** The schema keyword that marks a field as secret; the form fields and `secretPaths` read it. */
export const SECRET_KEYWORD = 'x-secret';

/** DNS-1123 subdomain: what a Kubernetes Secret name must be. */
const SECRET_NAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
/** A key of a Secret's `data`. */
const SECRET_KEY_PATTERN = '^[-._a-zA-Z0-9]+$';

export const SecretKeySelector = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 253,
      pattern: SECRET_NAME_PATTERN,
      description: 'Name of the Secret in the worker namespace',
    }),
    key: Type.String({
      minLength: 1,
      maxLength: 253,
      pattern: SECRET_KEY_PATTERN,
      description: 'Key inside the Secret',
    }),
  },
  { $id: 'SecretKeySelector', additionalProperties: false },
);

/** `{ valueFrom: { secretKeyRef: { name, key } } }` */
export const SecretRef = Type.Object(
  {
    valueFrom: Type.Object({ secretKeyRef: SecretKeySelector }, { additionalProperties: false }),
  },
  {
    $id: 'SecretRef',
    additionalProperties: false,
    description: 'A reference to a key of an existing Secret in the worker namespace',
  },
);
export type SecretRef = Static<typeof SecretRef>;
/** What a secret field holds: the inline value or a reference. */
export type SecretValue = string | SecretRef;

export interface SecretFieldOptions {
  /** Constraints on the inline value (a base64 key, …). */
  inline?: { minLength?: number; maxLength?: number; pattern?: string; format?: string };
  title?: string;
}

/** A secret field: the inline string or a `SecretRef`, marked with `x-secret`. */
export function secretField(description: string, opts: SecretFieldOptions = {}): TSchema {
  return Type.Union([Type.String({ minLength: 1, maxLength: 65536, ...opts.inline }), SecretRef], {
    [SECRET_KEYWORD]: true,
    description,
    ...(opts.title ? { title: opts.title } : {}),
  });
}

export function isSecretRef(value: unknown): value is SecretRef {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  const from = (value as { valueFrom?: unknown }).valueFrom;
  if (!from || typeof from !== 'object') return false;
  const ref = (from as { secretKeyRef?: unknown }).secretKeyRef;
  return (
    !!ref &&
    typeof ref === 'object' &&
    typeof (ref as { name?: unknown }).name === 'string' &&
    typeof (ref as { key?: unknown }).key === 'string'
  );
}

export function isSecretSchema(schema: unknown): boolean {
  return (
    !!schema && typeof schema === 'object' && (schema as Record<string, unknown>)[SECRET_KEYWORD] === true
  );
}

/** A map whose every value is a secret (WEBHOOK_TARGET's `headers`): a Record of secret fields. */
export function isSecretMapSchema(schema: unknown): boolean {
  if (!schema || typeof schema !== 'object') return false;
  const pattern = (schema as { patternProperties?: Record<string, unknown> }).patternProperties;
  return !!pattern && Object.values(pattern).some(isSecretSchema);
}
