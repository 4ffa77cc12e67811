import {
  ApiException,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  Watch,
  type KubeConfig,
} from '@kubernetes/client-node';
import { RESOURCE_SCHEMAS } from '../catalog/resources.js';
import {
  AlreadyExistsError,
  ConflictError,
  ExpiredError,
  NotFoundError,
  SLUICE_KINDS,
  type ClusterObject,
  type ClusterPort,
  type ListResult,
  type ObjectMeta,
  type SluiceKind,
  type WatchEvent,
} from '../ports/cluster.js';
import { abortableSleep } from '../util/abortable-sleep.js';
import { API_GROUP, API_VERSION } from '../util/version.js';
import { InvalidError } from './errors.js';

// The cluster port on a real API server (architecture brief, "Two runtimes,
// one code path"): the sluice.dev custom resources through
// `@kubernetes/client-node`. The API server already has the semantics the
// port promises (etcd's revision as resourceVersion, generation on spec
// changes, status subresource, finalizers, watch from a revision), so this
// adapter maps calls and errors and adds two things: a watch that outlives
// the API server's own stream timeouts, and one that awaits each handler.

export interface KubernetesClusterOptions {
  kubeConfig: KubeConfig;
  /**
   * The namespace of a Role-scoped install: lists and watches "of every
   * namespace" stay in it, as the service account may not read others.
   * Unset: cluster-wide (needs a ClusterRole).
   */
  namespace?: string;
  /** Field manager recorded on writes (`managedFields`): who changed what. */
  fieldManager?: string;
  /** Seconds after which the API server ends a watch stream and it is reopened; default 300. */
  watchTimeoutSeconds?: number;
}

const GROUP_VERSION = `${API_GROUP}/${API_VERSION}`;
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

type Raw = {
  apiVersion?: string;
  kind?: string;
  metadata?: Record<string, unknown>;
  spec?: unknown;
  status?: unknown;
};

/** The fields of ObjectMeta the port carries (no managedFields, no grace period). */
const META_KEYS = [
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'labels',
  'annotations',
  'finalizers',
  'ownerReferences',
] as const satisfies readonly (keyof ObjectMeta)[];

function toObject<T extends ClusterObject>(raw: Raw): T {
  const meta = raw.metadata ?? {};
  const metadata: Record<string, unknown> = {};
  for (const key of META_KEYS) {
    const value = meta[key];
    if (value === undefined || value === null) continue;
    // The generated client may hand back Dates; the port speaks RFC 3339.
    metadata[key] = value instanceof Date ? value.toISOString().replace(/\.\d{3}Z$/, 'Z') : value;
  }
  const object: Record<string, unknown> = {
    apiVersion: raw.apiVersion ?? GROUP_VERSION,
    kind: raw.kind,
    metadata,
    spec: raw.spec ?? {},
  };
  if (raw.status !== undefined && raw.status !== null) object.status = raw.status;
  return object as unknown as T;
}

/** What create and update send: the writable metadata and the spec (status only through its subresource). */
function bodyOf(object: ClusterObject, resourceVersion?: string): Raw {
  const { name, namespace, labels, annotations, finalizers, ownerReferences } = object.metadata;
  return {
    apiVersion: GROUP_VERSION,
    kind: object.kind,
    metadata: { name, namespace, labels, annotations, finalizers, ownerReferences, resourceVersion },
    spec: object.spec,
  };
}

function plural(kind: string): string {
  if (!(SLUICE_KINDS as readonly string[]).includes(kind)) {
    throw new InvalidError(`kind ${JSON.stringify(kind)} is not one of ${SLUICE_KINDS.join(', ')}`);
  }
  return RESOURCE_SCHEMAS[kind as SluiceKind].plural;
}

interface StatusBody {
  reason?: string;
  message?: string;
  code?: number;
}

function statusOf(error: ApiException<unknown>): StatusBody {
  const body = error.body;
  if (typeof body === 'string') {
    try {
      return JSON.parse(body) as StatusBody;
    } catch {
      return {};
    }
  }
  return (body ?? {}) as StatusBody;
}

/** Maps the API server's answers to the port's errors; the message is the server's. */
function mapError(error: unknown): unknown {
  if (!(error instanceof ApiException)) return error;
  const status = statusOf(error);
  const message = status.message ?? `API server answered ${error.code}`;
  switch (error.code) {
    case 404:
      return new NotFoundError(message);
    case 409:
      return status.reason === 'AlreadyExists' ? new AlreadyExistsError(message) : new ConflictError(message);
    case 410:
      return new ExpiredError(message);
    case 400:
    case 422:
      return new InvalidError(message);
    default:
      return error;
  }
}

async function call<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    throw mapError(error);
  }
}

/** What one watch stream hands its consumer: events in order, then its end. */
type Item = { type: 'event'; phase: string; object: Raw } | { type: 'closed'; error: unknown };

export class KubernetesCluster implements ClusterPort {
  readonly adapter = 'kubernetes' as const;
  private readonly api: CustomObjectsApi;
  private readonly watcher: Watch;
  private readonly namespace: string | undefined;
  private readonly fieldManager: string;
  private readonly watchTimeoutSeconds: number;

  constructor(options: KubernetesClusterOptions) {
    this.api = options.kubeConfig.makeApiClient(CustomObjectsApi);
    this.watcher = new Watch(options.kubeConfig);
    this.namespace = options.namespace;
    this.fieldManager = options.fieldManager ?? 'sluice';
    this.watchTimeoutSeconds = options.watchTimeoutSeconds ?? 300;
  }

  /** Reachable, and the CRDs are installed (a list of one Connector). */
  async ping(): Promise<void> {
    await this.list('Connector', this.namespace, undefined, 1);
  }

  async get<T extends ClusterObject>(
    kind: SluiceKind,
    namespace: string,
    name: string,
  ): Promise<T | undefined> {
    const p = plural(kind);
    try {
      const raw = (await call(() =>
        this.api.getNamespacedCustomObject({
          group: API_GROUP,
          version: API_VERSION,
          namespace,
          plural: p,
          name,
        }),
      )) as Raw;
      return toObject<T>(raw);
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  async list<T extends ClusterObject>(
    kind: SluiceKind,
    namespace?: string,
    labelSelector?: string,
    limit?: number,
  ): Promise<ListResult<T>> {
    const p = plural(kind);
    const ns = namespace ?? this.namespace;
    const common = {
      group: API_GROUP,
      version: API_VERSION,
      plural: p,
      labelSelector: labelSelector || undefined,
    };
    const items: T[] = [];
    let resourceVersion = '';
    let _continue: string | undefined;
    // Pages of 500, so a list of 10,000 objects is not one huge answer; the
    // API server serves every page from the first page's snapshot.
    do {
      const page = { ...common, limit: limit ?? 500, _continue };
      const raw = (await call(() =>
        ns === undefined
          ? this.api.listClusterCustomObject(page)
          : this.api.listNamespacedCustomObject({ ...page, namespace: ns }),
      )) as { items?: Raw[]; metadata?: { resourceVersion?: string; continue?: string } };
      for (const item of raw.items ?? []) items.push(toObject<T>({ ...item, kind }));
      resourceVersion = raw.metadata?.resourceVersion ?? resourceVersion;
      _continue = limit === undefined ? raw.metadata?.continue || undefined : undefined;
    } while (_continue);
    return { items, resourceVersion };
  }

  async create<T extends ClusterObject>(object: T): Promise<T> {
    const p = plural(object.kind);
    const { namespace } = object.metadata;
    const body = bodyOf(object);
    const raw = (await call(() =>
      this.api.createNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace,
        plural: p,
        body,
        fieldManager: this.fieldManager,
      }),
    )) as Raw;
    return toObject<T>(raw);
  }

  async update<T extends ClusterObject>(object: T): Promise<T> {
    const p = plural(object.kind);
    const { name, namespace } = object.metadata;
    const resourceVersion = object.metadata.resourceVersion;
    // No resourceVersion: an unconditional replace, as the port allows; the
    // API server insists on one, so read it and retry on a lost race.
    for (let attempt = 0; ; attempt++) {
      const rv = resourceVersion ?? (await this.get(object.kind, namespace, name))?.metadata.resourceVersion;
      if (rv === undefined) throw new NotFoundError(`${object.kind} ${namespace}/${name} not found`);
      const body = bodyOf(object, rv);
      try {
        const raw = (await call(() =>
          this.api.replaceNamespacedCustomObject({
            group: API_GROUP,
            version: API_VERSION,
            namespace,
            plural: p,
            name,
            body,
            fieldManager: this.fieldManager,
          }),
        )) as Raw;
        return toObject<T>(raw);
      } catch (error) {
        if (error instanceof ConflictError && resourceVersion === undefined && attempt < 5) continue;
        throw error;
      }
    }
  }

  async patch<T extends ClusterObject>(
    kind: SluiceKind,
    namespace: string,
    name: string,
    patch: unknown,
  ): Promise<T> {
    const p = plural(kind);
    const raw = (await call(() =>
      this.api.patchNamespacedCustomObject(
        {
          group: API_GROUP,
          version: API_VERSION,
          namespace,
          plural: p,
          name,
          body: patch,
          fieldManager: this.fieldManager,
        },
        MERGE_PATCH,
      ),
    )) as Raw;
    return toObject<T>(raw);
  }

  async patchStatus<T extends ClusterObject>(
    kind: SluiceKind,
    namespace: string,
    name: string,
    status: unknown,
  ): Promise<T> {
    const p = plural(kind);
    const raw = (await call(() =>
      this.api.patchNamespacedCustomObjectStatus(
        {
          group: API_GROUP,
          version: API_VERSION,
          namespace,
          plural: p,
          name,
          body: { status },
          fieldManager: this.fieldManager,
        },
        MERGE_PATCH,
      ),
    )) as Raw;
    return toObject<T>(raw);
  }

  async delete(kind: SluiceKind, namespace: string, name: string): Promise<void> {
    const p = plural(kind);
    await call(() =>
      this.api.deleteNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace,
        plural: p,
        name,
      }),
    );
  }

  /**
   * One logical watch over possibly many API server streams: each stream
   * ends after `watchTimeoutSeconds` (or when the server or network drops
   * it) and the next one starts from the last revision delivered, event or
   * bookmark, so the caller sees one ordered, gap-free sequence. A revision
   * the server no longer has (410 Gone) ends it with ExpiredError.
   */
  async watch<T extends ClusterObject>(
    kind: SluiceKind,
    resourceVersion: string,
    onEvent: (event: WatchEvent<T>) => void | Promise<void>,
    signal: AbortSignal,
    onBookmark?: (resourceVersion: string) => void | Promise<void>,
  ): Promise<void> {
    const p = plural(kind);
    const path =
      this.namespace === undefined
        ? `/apis/${GROUP_VERSION}/${p}`
        : `/apis/${GROUP_VERSION}/namespaces/${this.namespace}/${p}`;
    let from = resourceVersion;
    let failures = 0;
    while (!signal.aborted) {
      const delivered = await this.stream(path, from, signal, async (phase, raw) => {
        const rv = String(raw.metadata?.resourceVersion ?? from);
        if (phase === 'BOOKMARK') {
          from = rv;
          await onBookmark?.(rv);
          return;
        }
        if (phase === 'ERROR') {
          const status = raw as StatusBody;
          if (status.code === 410) throw new ExpiredError(status.message ?? 'resourceVersion too old');
          throw new Error(`watch of ${p} failed: ${status.message ?? 'unknown error'}`);
        }
        if (phase !== 'ADDED' && phase !== 'MODIFIED' && phase !== 'DELETED') return;
        from = rv;
        await onEvent({ type: phase, object: toObject<T>({ ...raw, kind }) });
      });
      // A stream that broke without delivering anything is retried with a
      // growing pause (a restarting API server), never in a hot loop.
      failures = delivered ? 0 : failures + 1;
      if (failures > 0 && !signal.aborted) await abortableSleep(Math.min(5000, 100 * 2 ** failures), signal);
    }
  }

  /** One API server watch stream; resolves when it ends (true if it delivered anything). */
  private async stream(
    path: string,
    from: string,
    signal: AbortSignal,
    handle: (phase: string, raw: Raw) => Promise<void>,
  ): Promise<boolean> {
    const queue: Item[] = [];
    let wake: (() => void) | undefined;
    const push = (item: Item) => {
      queue.push(item);
      wake?.();
    };
    const controller = await this.watcher.watch(
      path,
      { resourceVersion: from, allowWatchBookmarks: true, timeoutSeconds: this.watchTimeoutSeconds },
      (phase: string, object: Raw) => push({ type: 'event', phase, object }),
      (error: unknown) => push({ type: 'closed', error }),
    );
    const abort = () => {
      controller.abort();
      push({ type: 'closed', error: null });
    };
    signal.addEventListener('abort', abort, { once: true });
    let delivered = false;
    try {
      for (;;) {
        const item = queue.shift();
        if (item === undefined) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        if (item.type === 'closed') {
          const status = (item.error as { statusCode?: number } | null)?.statusCode;
          if (status === 410) throw new ExpiredError('resourceVersion too old');
          // Not allowed or not installed: retrying would hide it.
          if (status === 401 || status === 403 || status === 404) {
            throw new Error(`watch of ${path} answered ${status}`);
          }
          return delivered;
        }
        if (signal.aborted) return delivered;
        await handle(item.phase, item.object);
        delivered = true;
      }
    } finally {
      signal.removeEventListener('abort', abort);
      controller.abort();
    }
  }
}
