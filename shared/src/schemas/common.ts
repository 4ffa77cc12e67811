import { Type, type Static, type TSchema } from '@sinclair/typebox';

/** A UUID string; every identifier of the API is one (spec, conventions). */
export const Uuid = Type.String({ format: 'uuid' });

/**
 * A UUID's text in lower case, as a JSON Schema `pattern`: the names of the
 * custom resources and their references (Kubernetes names are lower case).
 */
export const UUID_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
const lowerCaseUuid = new RegExp(UUID_PATTERN);
const anyCaseUuid = new RegExp(UUID_PATTERN, 'i');

/** A UUID as the API takes one, in either case (the `uuid` format of `Uuid`). */
export const isUuid = (v: unknown): v is string => typeof v === 'string' && anyCaseUuid.test(v);

/** A UUID in lower case (`UUID_PATTERN`): an object name or reference the catalog can hold. */
export const isLowerCaseUuid = (v: unknown): v is string => typeof v === 'string' && lowerCaseUuid.test(v);
export const Timestamp = Type.String({ format: 'date-time' });

/** What every read shows in place of a stored secret (spec 2.14). */
export const REDACTED = '<redacted>';

/** Spec 2.1: the envelope of every paginated list. */
export const Page = <T extends TSchema>(item: T, title: string) =>
  Type.Object(
    {
      items: Type.Array(item),
      total: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
      page: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]),
      size: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]),
      pages: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
    },
    { $id: title, additionalProperties: false },
  );

/**
 * The highest page a list accepts: far past any real list (100 million rows at
 * the largest size), and low enough that its offset stays an exact integer in
 * every database and driver. A page past the last one is an empty page.
 */
export const MAX_PAGE = 1_000_000;

/** Spec 4.9: `page` from 1 (at most MAX_PAGE), `size` default 50, at most 100. */
export const PageQuery = Type.Object({
  page: Type.Integer({
    minimum: 1,
    maximum: MAX_PAGE,
    default: 1,
    description: `From 1, at most ${MAX_PAGE}; a page past the last one is empty`,
  }),
  size: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
});

/** Spec 7: the error bodies. */
export const ValidationIssue = Type.Object(
  {
    loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
    msg: Type.String(),
    type: Type.String(),
  },
  { additionalProperties: false },
);
export const ValidationErrorBody = Type.Object(
  { detail: Type.Array(ValidationIssue) },
  { $id: 'HTTPValidationError', additionalProperties: false },
);
export const ErrorBody = Type.Object(
  {
    detail: Type.Union([
      Type.String(),
      Type.Object({ code: Type.String(), reason: Type.String() }, { additionalProperties: false }),
    ]),
  },
  { $id: 'ErrorModel', additionalProperties: false },
);
export const StatusBody = Type.Object({ status: Type.String() }, { additionalProperties: true });

// Helpers of the catalog bodies (connectors.ts, datamodels.ts, subscriptions.ts,
// pipelines.ts) and the other resources.

export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
export const Literals = <T extends string>(values: readonly T[], description?: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    description ? { description } : {},
  );
/** A name users see: 1–255 characters, not only blanks. */
export const HumanName = Type.String({ minLength: 1, maxLength: 255, pattern: '\\S' });

/** `search` of the catalog lists. */
export const NameSearch = Type.String({
  minLength: 1,
  maxLength: 255,
  description: 'Part of the name, any case',
});

export const CatalogFilterOneQuery = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  team_id: Type.Optional(Uuid),
});
export type CatalogFilterOneQuery = Static<typeof CatalogFilterOneQuery>;

/** 202 bodies of start/stop/pause: the state the call moved to, in upper case (spec 2.6). */
export const StateString = Type.String({ description: 'The new state in upper case, e.g. "BUILDING"' });
