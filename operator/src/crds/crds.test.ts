import { describe, expect, it } from '@jest/globals';
import { customResourceDefinition, structuralSchema } from '@sluice/shared/catalog';
import { SLUICE_KINDS } from '@sluice/shared/ports';
import { Type } from '@sinclair/typebox';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CRD_DIRECTORIES, crdFileName, renderCrdFiles } from './render.js';

const ROOT = resolve(import.meta.dirname, '../../..');

/** Every schema node under `node`, with its path. */
function* nodes(node: Record<string, unknown>, path: string): Generator<[string, Record<string, unknown>]> {
  yield [path, node];
  const props = (node.properties ?? {}) as Record<string, Record<string, unknown>>;
  for (const [k, v] of Object.entries(props)) yield* nodes(v, `${path}.${k}`);
  if (node.items) yield* nodes(node.items as Record<string, unknown>, `${path}[]`);
}

describe('generated CRDs', () => {
  it.each(CRD_DIRECTORIES)('are committed in %s exactly as `npm run gen:crds` writes them', (dir) => {
    const expected = renderCrdFiles();
    const committed = readdirSync(join(ROOT, dir)).filter((f) => f.endsWith('.yaml'));
    expect(committed.sort()).toEqual([...expected.keys()].sort());
    for (const [name, text] of expected) {
      // On failure: run `npm run gen:crds` and commit the result.
      expect(readFileSync(join(ROOT, dir, name), 'utf8')).toBe(text);
    }
  });

  it.each(SLUICE_KINDS)('%s is structural: one type per node, status as a subresource', (kind) => {
    const crd = customResourceDefinition(kind);
    const version = (crd.spec.versions as Record<string, unknown>[])[0]!;
    // A Connector also scales (kubectl scale, an HPA, KEDA): its spec.replicas, its ready workers, their pods.
    expect(version.subresources).toEqual(
      kind === 'Connector'
        ? {
            status: {},
            scale: {
              specReplicasPath: '.spec.replicas',
              statusReplicasPath: '.status.replicas',
              labelSelectorPath: '.status.selector',
            },
          }
        : { status: {} },
    );
    const root = (version.schema as { openAPIV3Schema: Record<string, unknown> }).openAPIV3Schema;
    for (const [path, node] of nodes(root, kind)) {
      expect([path, typeof node.type]).toEqual([path, 'string']);
      for (const banned of ['anyOf', 'oneOf', 'allOf', 'const', 'additionalProperties', 'patternProperties', '$id']) {
        expect([path, banned, node[banned]]).toEqual([path, banned, undefined]);
      }
    }
    expect(existsSync(join(ROOT, 'crds', crdFileName(kind)))).toBe(true);
  });

  it('carries the enums, patterns and required fields the API server enforces', () => {
    const crd = customResourceDefinition('Pipeline');
    type Node = { properties: Record<string, Node>; required?: string[] } & Record<string, unknown>;
    const schema = (crd.spec.versions as { schema: { openAPIV3Schema: Node } }[])[0]!.schema.openAPIV3Schema;
    const spec = schema.properties.spec!;
    expect(spec.properties.desiredState).toMatchObject({ type: 'string', enum: ['draft', 'running', 'paused'] });
    expect(spec.properties.teamId!.pattern).toMatch(/^\^\[0-9a-f\]\{8\}/);
    expect(spec.required).toEqual(expect.arrayContaining(['name', 'teamId', 'desiredState']));
    expect(schema.properties.status!.properties.conditions).toMatchObject({
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    });
    expect(crd.spec.names).toMatchObject({ shortNames: ['spl'], categories: ['sluice'] });
  });

  it('refuses schemas a CRD cannot express, naming where', () => {
    const mixed = Type.Object({ x: Type.Union([Type.String(), Type.Number()]) });
    expect(() => structuralSchema(mixed, 'T')).toThrow('T.x: only unions of string literals');
    const record = Type.Object({ y: Type.Record(Type.String(), Type.Number()) });
    expect(() => structuralSchema(record, 'T')).toThrow('T.y: open records need preserve-unknown-fields');
  });
});
