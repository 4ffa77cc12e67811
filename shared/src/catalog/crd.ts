import type { TSchema } from '@sinclair/typebox';
import type { SluiceKind } from '../ports/cluster.js';
import { API_GROUP, API_VERSION } from '../util/version.js';
import { RESOURCE_SCHEMAS } from './resources.js';

// The CustomResourceDefinitions of the five kinds, built from the same
// TypeBox schemas that validate the embedded cluster's writes and the REST
// bodies (one definition of each thing). `npm run gen:crds` writes them to
// crds/ and charts/sluice/crds/; a test fails when those files drift.

/** A JSON Schema node as the API server's structural-schema rules accept it. */
export type StructuralSchema = Record<string, unknown>;

/** The CRD object (apiextensions.k8s.io/v1) of one kind. */
export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels: Record<string, string> };
  spec: Record<string, unknown>;
}

/** Every kind is listed by `kubectl get sluice`. */
export const CRD_CATEGORY = 'sluice';

// Keywords a structural schema may carry besides `type`, `properties`,
// `items`, `required` and `description` (which are handled one by one).
const KEPT = [
  'format',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'default',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-validations',
] as const;

/**
 * Turns one TypeBox node into a structural schema: a union of string
 * literals becomes an `enum`, an open record becomes an object whose unknown
 * fields are preserved, `additionalProperties: false` is dropped (the API
 * server prunes unknown fields of a structural schema anyway) and `$id`s go.
 * Anything else that cannot be expressed throws, so a schema change that
 * breaks the CRDs fails the generator and its test, not an install.
 */
export function structuralSchema(node: TSchema, path = '$'): StructuralSchema {
  const out: StructuralSchema = {};
  if (node.description !== undefined) out.description = node.description;
  if (node['x-kubernetes-preserve-unknown-fields'] === true) {
    return { ...out, type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  }
  if (Array.isArray(node.anyOf)) {
    const values = (node.anyOf as TSchema[]).map((s) => s.const as unknown);
    if (!values.every((v) => typeof v === 'string')) {
      throw new Error(`${path}: only unions of string literals can be expressed in a CRD`);
    }
    return { ...out, type: 'string', enum: values };
  }
  if (typeof node.type !== 'string') throw new Error(`${path}: a structural schema needs one type`);
  out.type = node.type;
  for (const key of KEPT) if (node[key] !== undefined) out[key] = node[key];
  if (node.type === 'object') {
    const properties = (node.properties ?? {}) as Record<string, TSchema>;
    if (node.patternProperties !== undefined)
      throw new Error(`${path}: open records need preserve-unknown-fields`);
    out.properties = Object.fromEntries(
      Object.entries(properties).map(([k, v]) => [k, structuralSchema(v, `${path}.${k}`)]),
    );
    if (Array.isArray(node.required) && node.required.length > 0) out.required = [...node.required];
  } else if (node.type === 'array') {
    out.items = structuralSchema(node.items as TSchema, `${path}[]`);
  }
  return out;
}

/** Conditions are a map keyed by `type`, as metav1.Condition lists are. */
function withConditionsAsMap(status: StructuralSchema): StructuralSchema {
  const properties = status.properties as Record<string, StructuralSchema>;
  if (properties.conditions === undefined) return status;
  return {
    ...status,
    properties: {
      ...properties,
      conditions: {
        ...properties.conditions,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
      },
    },
  };
}

interface PrinterColumn {
  name: string;
  type: 'string' | 'date' | 'integer';
  jsonPath: string;
  description?: string;
  priority?: number;
}

/** `kubectl get` columns: what an operator looks at first. */
function printerColumns(kind: SluiceKind): PrinterColumn[] {
  const columns: PrinterColumn[] = [
    // Not "Name": kubectl upper-cases headers, and NAME is already the
    // object's own (a UUID) in the first column.
    { name: 'Display Name', type: 'string', jsonPath: '.spec.name', description: 'The name users see' },
  ];
  if (kind === 'Connector') {
    columns.push({ name: 'Type', type: 'string', jsonPath: '.spec.connectorType' });
  }
  // Connectors and pipelines have a state machine (spec 3); a data model or
  // subscription has none, so its State column is why it flows or not (its
  // Ready condition's reason: Flowing, Disabled, ConnectorStopped, …).
  const hasState = kind === 'Connector' || kind === 'Pipeline' || kind === 'Warehouse';
  columns.push({
    name: 'State',
    type: 'string',
    jsonPath: hasState ? '.status.state' : '.status.conditions[?(@.type=="Ready")].reason',
  });
  if (kind === 'Connector' || kind === 'Subscription') {
    // What it converges to, its own spec or a pipeline's (effective-state.ts), and why.
    columns.push(
      { name: 'Effective', type: 'string', jsonPath: '.status.effectiveState' },
      { name: 'Effective Reason', type: 'string', jsonPath: '.status.effectiveReason', priority: 1 },
    );
  }
  columns.push(
    {
      name: 'Ready',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].status',
    },
    { name: 'Team', type: 'string', jsonPath: '.spec.teamId', priority: 1 },
    { name: 'Message', type: 'string', jsonPath: '.status.message', priority: 1 },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  );
  return columns;
}

/**
 * Every kind has the status subresource; a Connector also has `scale`, so
 * `kubectl scale connector/<id> --replicas=3`, a HorizontalPodAutoscaler or
 * KEDA set `spec.replicas` (a source refuses through the spec's CEL rule,
 * replicas.ts) and read the ready workers and their pods' selector back
 * from the status the operator writes.
 */
function subresources(kind: SluiceKind): Record<string, unknown> {
  if (kind !== 'Connector') return { status: {} };
  return {
    status: {},
    scale: {
      specReplicasPath: '.spec.replicas',
      statusReplicasPath: '.status.replicas',
      labelSelectorPath: '.status.selector',
    },
  };
}

/** The CRD of `kind`, named `<plural>.sluice.dev`. */
export function customResourceDefinition(kind: SluiceKind): CustomResourceDefinition {
  const { spec, status, plural, shortNames } = RESOURCE_SCHEMAS[kind];
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.${API_GROUP}`,
      labels: { 'app.kubernetes.io/part-of': 'sluice' },
    },
    spec: {
      group: API_GROUP,
      scope: 'Namespaced',
      names: {
        kind,
        listKind: `${kind}List`,
        plural,
        singular: kind.toLowerCase(),
        shortNames: [...shortNames],
        categories: [CRD_CATEGORY],
      },
      versions: [
        {
          name: API_VERSION,
          served: true,
          storage: true,
          subresources: subresources(kind),
          additionalPrinterColumns: printerColumns(kind),
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: `${kind} of Sluice (${API_GROUP}/${API_VERSION}); written by the gateway or applied by a user, reconciled by the operator.`,
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: structuralSchema(spec, `${kind}.spec`),
                status: withConditionsAsMap(structuralSchema(status, `${kind}.status`)),
              },
            },
          },
        },
      ],
    },
  };
}
