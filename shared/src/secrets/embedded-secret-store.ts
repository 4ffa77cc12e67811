import { sql, type Generated, type Kysely } from 'kysely';
import { InvalidError } from '../cluster/errors.js';
import type { SecretBox } from '../crypto/secret-box.js';
import {
  type SecretMetadata,
  type SecretStorePort,
  type SecretSummary,
  type StoredSecret,
  type SecretScope,
} from '../ports/secret-store.js';
import { resolveSecretRef } from './grants.js';

// The table of its migrations (migrations/ beside this folder's index), as this adapter sees it.
interface SecretTables {
  secrets: {
    namespace: string;
    name: string;
    sealed_data: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    created_at: Generated<Date>;
    updated_at: Generated<Date>;
  };
}

/** DNS-1123 subdomain, as a Kubernetes Secret name. */
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A key of a Secret's `data`. */
const KEY = /^[-._a-zA-Z0-9]+$/;

function checkName(what: string, name: string): void {
  if (name.length > 253 || !NAME.test(name))
    throw new InvalidError(`${what} "${name}" is not a DNS-1123 name`);
}

function checkData(data: Record<string, string>): void {
  for (const [key, value] of Object.entries(data)) {
    if (key.length > 253 || !KEY.test(key)) throw new InvalidError(`Secret key "${key}" is not a valid key`);
    if (typeof value !== 'string') throw new InvalidError(`The value of secret key "${key}" is not a string`);
  }
}

/**
 * The secret store of the embedded adapter: one row per secret in the service
 * database, the whole `data` object sealed as one JSON string with the
 * service's SecretBox. Listings open the rows to name the keys and never
 * return a value.
 */
export class EmbeddedSecretStore implements SecretStorePort {
  readonly adapter = 'embedded' as const;
  readonly #db: Kysely<SecretTables>;
  readonly #box: SecretBox;

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  constructor(db: Kysely<any>, box: SecretBox) {
    this.#db = db as Kysely<SecretTables>;
    this.#box = box;
  }

  async put(
    namespace: string,
    name: string,
    data: Record<string, string>,
    meta: SecretMetadata = {},
  ): Promise<void> {
    checkName('Namespace', namespace);
    checkName('Secret name', name);
    checkData(data);
    const sealed = this.#box.seal(JSON.stringify(data));
    const labelJson = sql<Record<string, string>>`${JSON.stringify(meta.labels ?? {})}::jsonb`;
    const annotationJson = sql<Record<string, string>>`${JSON.stringify(meta.annotations ?? {})}::jsonb`;
    await this.#db
      .insertInto('secrets')
      .values({ namespace, name, sealed_data: sealed, labels: labelJson, annotations: annotationJson })
      .onConflict((oc) =>
        oc.columns(['namespace', 'name']).doUpdateSet({
          sealed_data: sealed,
          labels: labelJson,
          annotations: annotationJson,
          updated_at: sql<Date>`now()`,
        }),
      )
      .execute();
  }

  async get(namespace: string, name: string): Promise<StoredSecret | undefined> {
    const row = await this.#db
      .selectFrom('secrets')
      .select(['name', 'sealed_data', 'labels', 'annotations', 'created_at'])
      .where('namespace', '=', namespace)
      .where('name', '=', name)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      name: row.name,
      data: this.#open(row.sealed_data),
      labels: row.labels,
      annotations: row.annotations,
      createdAt: row.created_at,
    };
  }

  async resolve(namespace: string, ref: { name: string; key: string }, scope: SecretScope): Promise<string> {
    return resolveSecretRef(this, namespace, ref, scope);
  }

  async list(namespace: string): Promise<SecretSummary[]> {
    const rows = await this.#db
      .selectFrom('secrets')
      .select(['name', 'sealed_data', 'labels', 'annotations', 'created_at'])
      .where('namespace', '=', namespace)
      .orderBy('name')
      .execute();
    return rows.map((row) => ({
      name: row.name,
      keys: Object.keys(this.#open(row.sealed_data)).sort(),
      labels: row.labels,
      annotations: row.annotations,
      createdAt: row.created_at,
    }));
  }

  async delete(namespace: string, name: string): Promise<boolean> {
    const result = await this.#db
      .deleteFrom('secrets')
      .where('namespace', '=', namespace)
      .where('name', '=', name)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  #open(sealed: string): Record<string, string> {
    return JSON.parse(this.#box.open(sealed)) as Record<string, string>;
  }
}
