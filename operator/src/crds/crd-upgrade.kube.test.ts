import { afterAll, beforeAll, expect, it } from '@jest/globals';
import {
  ApiextensionsV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  loadYaml,
  setHeaderOptions,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { dump, load } from 'js-yaml';
import { describeWithKube, startPrivateApiServer } from '@sluice/testing/kube';

// The CRD upgrade path of charts/sluice/README.md ("Upgrading: CRDs first"),
// followed step by step on a real kube-apiserver + etcd, with the real Helm:
//
//   1. `helm install` of "the previous release": a chart whose crds/ holds
//      the current CRDs except Pipeline, which is an older generation
//      (previousPipelineCrd below: one field fewer, one field more, a pattern
//      missing, an enum narrower). Objects are created under it.
//   2. `helm upgrade` with the current crds/: Helm leaves CRDs alone.
//   3. `kubectl apply --server-side --force-conflicts -f crds/`, done as
//      kubectl does it: a server-side apply (PATCH application/apply-patch+yaml)
//      with field manager `kubectl` and force=true, through client-node.
//
// and asserts what a user would notice. A private API server, because this
// file installs sluice.dev CRDs with another schema, cluster-wide.

const ROOT = resolve(import.meta.dirname, '../../..');
const CRD_DIR = join(ROOT, 'crds');
const NS = 'sluice';
const GROUP = 'sluice.dev';
const VERSION = 'v1alpha1';
const PIPELINE_CRD = 'pipelines.sluice.dev';
const PIPELINE_FILE = 'sluice.dev_pipelines.yaml';
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
// What `kubectl get` asks for: the server renders the CRD's printer columns.
const AS_TABLE = setHeaderOptions('Accept', 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json');

/* eslint-disable @typescript-eslint/no-explicit-any -- CRDs and objects are walked as plain data */
type Any = any;

/**
 * The Pipeline CRD of "the previous release". The CRDs have not changed in
 * git history yet (they are all generation one), so the previous release is
 * derived from the current file by undoing four typical changes between two
 * releases of a v1alpha1 API. Each edit checks that what it undoes is still
 * in the current CRD, so this fails loudly instead of testing nothing when
 * the schema moves on.
 */
function previousPipelineCrd(current: Any): Any {
  // A JSON copy, not structuredClone: jest's realm differs and js-yaml's dump refuses foreign objects.
  const crd = JSON.parse(JSON.stringify(current));
  const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
  const need = (ok: boolean, what: string) => {
    if (!ok) throw new Error(`fixture out of date: the current Pipeline CRD no longer has ${what}`);
  };
  // 1. A field added since: the previous release did not know spec.smtName.
  need(spec.properties.smtName !== undefined, 'spec.smtName');
  delete spec.properties.smtName;
  // 2. Validation tightened since: spec.name had no pattern.
  need(typeof spec.properties.name.pattern === 'string', 'a pattern on spec.name');
  delete spec.properties.name.pattern;
  // 3. An enum widened since: desiredState could not be `draft`.
  need(spec.properties.desiredState.enum.includes('draft'), 'draft in spec.desiredState');
  spec.properties.desiredState.enum = spec.properties.desiredState.enum.filter((v: string) => v !== 'draft');
  // 4. A field removed since: spec.legacyNote existed then.
  need(spec.properties.legacyNote === undefined, 'no spec.legacyNote');
  spec.properties.legacyNote = { type: 'string', description: 'Removed in the next release' };
  return crd;
}

function run(cmd: string, args: string[], timeoutMs = 120_000): Promise<{ code: number; out: string }> {
  return new Promise((done) => {
    execFile(cmd, args, { cwd: ROOT, timeout: timeoutMs, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

const uuid = (n: number) => `0b6f7a7e-8c1d-4f5e-9a3b-${String(n).padStart(12, '0')}`;
function pipeline(n: number, spec: Record<string, unknown> = {}): Any {
  const ref = uuid(900);
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'Pipeline',
    metadata: { name: uuid(n), namespace: NS },
    spec: {
      name: `orders-${n}`,
      teamId: ref,
      sourceConnectorId: ref,
      targetConnectorId: ref,
      datamodelId: ref,
      subscriptionId: ref,
      ownsSource: true,
      ownsTarget: true,
      desiredState: 'running',
      version: 1,
      ...spec,
    },
  };
}

/** The body of a refused call, for matching its message. */
async function refusal(call: Promise<unknown>): Promise<{ code: number; body: string }> {
  try {
    await call;
  } catch (e) {
    const err = e as { code?: number; body?: unknown };
    return { code: err.code ?? 0, body: String(err.body) };
  }
  throw new Error('the API server accepted the call');
}

describeWithKube('CRD upgrade path: helm install, helm upgrade, kubectl apply --server-side', () => {
  let server: { kubeconfig: string; stop(): Promise<void> };
  let helm: string;
  const kc = new KubeConfig();
  let crds: ApiextensionsV1Api;
  let objects: KubernetesObjectApi;
  let custom: CustomObjectsApi;
  let work: string;
  const files = readdirSync(CRD_DIR).filter((f) => f.endsWith('.yaml'));
  const crdNames = files.map((f) => loadYaml<V1CustomResourceDefinition>(readFileSync(join(CRD_DIR, f), 'utf8')).metadata!.name!);
  const metaOf = async (name: string) => (await crds.readCustomResourceDefinition({ name })).metadata!;

  const pipelines = { group: GROUP, version: VERSION, namespace: NS, plural: 'pipelines' };
  const read = (n: number): Promise<Any> => custom.getNamespacedCustomObject({ ...pipelines, name: uuid(n) });
  const create = (body: Any): Promise<Any> => custom.createNamespacedCustomObject({ ...pipelines, body });
  const patch = (n: number, body: Any): Promise<Any> =>
    custom.patchNamespacedCustomObject({ ...pipelines, name: uuid(n), body }, MERGE_PATCH);
  const patchStatus = (n: number, body: Any): Promise<Any> =>
    custom.patchNamespacedCustomObjectStatus({ ...pipelines, name: uuid(n), body }, MERGE_PATCH);

  /** `kubectl apply --server-side [--force-conflicts] -f crds/`. */
  async function applyCrds(force: boolean, only?: string): Promise<void> {
    for (const file of files.filter((f) => !only || f === only)) {
      // kubectl sends the file's object; loadYaml maps it onto the client's model.
      const crd = loadYaml<V1CustomResourceDefinition>(readFileSync(join(CRD_DIR, file), 'utf8'));
      await objects.patch(crd, undefined, undefined, 'kubectl', force, PatchStrategy.ServerSideApply);
    }
  }

  async function established(name: string): Promise<V1CustomResourceDefinition> {
    for (let i = 0; ; i++) {
      const got = await crds.readCustomResourceDefinition({ name });
      const ok = (type: string) => got.status?.conditions?.some((c) => c.type === type && c.status === 'True');
      if (ok('Established') && ok('NamesAccepted') && (got.status?.storedVersions?.length ?? 0) > 0) return got;
      if (i > 300) throw new Error(`${name} is not established: ${JSON.stringify(got.status)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** A chart of its own with these CRDs (by file name) and one ConfigMap. */
  function chart(dir: string, version: string, crdFiles: Map<string, string>): string {
    mkdirSync(join(dir, 'crds'), { recursive: true });
    mkdirSync(join(dir, 'templates'), { recursive: true });
    writeFileSync(join(dir, 'Chart.yaml'), `apiVersion: v2\nname: sluice\nversion: ${version}\n`);
    writeFileSync(
      join(dir, 'templates/marker.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: release-marker\ndata:\n  version: {{ .Chart.Version | quote }}\n',
    );
    for (const [name, text] of crdFiles) writeFileSync(join(dir, 'crds', name), text);
    return dir;
  }
  const current = () => new Map(files.map((f) => [f, readFileSync(join(CRD_DIR, f), 'utf8')]));

  // Filled in by beforeAll: objects and CRD metadata as they were before the upgrade.
  let kept: Any;
  let installedGeneration: Record<string, number>;

  beforeAll(async () => {
    const tool = await run('bash', [join(ROOT, 'scripts/tools/ensure-tool.sh'), 'helm'], 20 * 60_000);
    if (tool.code !== 0) throw new Error(`ensure-tool.sh helm failed:\n${tool.out}`);
    helm = tool.out.trim().split('\n').pop()!;
    server = await startPrivateApiServer();
    kc.loadFromFile(server.kubeconfig);
    crds = kc.makeApiClient(ApiextensionsV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    objects = KubernetesObjectApi.makeApiClient(kc);
    work = mkdtempSync(join(tmpdir(), 'sluice-crd-upgrade-'));

    // 1. helm install of the previous release.
    const previous = current();
    previous.set(PIPELINE_FILE, dump(previousPipelineCrd(load(previous.get(PIPELINE_FILE)!)), { noRefs: true }));
    const install = await run(helm, [
      'install', 'sluice', chart(join(work, 'previous'), '0.1.0', previous),
      '--namespace', NS, '--create-namespace', '--kubeconfig', server.kubeconfig,
    ]); // prettier-ignore
    if (install.code !== 0) throw new Error(`helm install failed:\n${install.out}`);
    installedGeneration = {};
    for (const name of crdNames) installedGeneration[name] = (await established(name)).metadata!.generation!;

    // Objects of the previous release. Right after a CRD is established its
    // schema may take a moment to reach every handler; retry a refused create.
    for (let i = 0; ; i++) {
      try {
        await create(pipeline(1, { smtName: 'ignored-then', legacyNote: 'from the previous release' }));
        break;
      } catch (e) {
        if (i > 50) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await patchStatus(1, {
      status: {
        state: 'paused',
        observedGeneration: 1,
        message: 'paused by the user',
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'Paused',
            message: 'paused by the user',
            lastTransitionTime: '2026-01-01T00:00:00Z',
          },
        ],
      },
    });
    // Valid then, invalid now (the name has spaces).
    await create(pipeline(2, { name: 'orders to dwh' }));
    kept = await read(1);
  }, 25 * 60_000);

  afterAll(async () => {
    await server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('the previous release is what is installed: smtName pruned, legacyNote kept, no draft, names with spaces', async () => {
    expect(kept.spec.smtName).toBeUndefined();
    expect(kept.spec.legacyNote).toBe('from the previous release');
    expect((await read(2)).spec.name).toBe('orders to dwh');
    const draft = await refusal(create(pipeline(3, { desiredState: 'draft' })));
    expect(draft.code).toBe(422);
    expect(draft.body).toContain('spec.desiredState');
    expect(await metaOf(PIPELINE_CRD)).toMatchObject({ generation: 1 });
  });

  it('helm upgrade with the new chart leaves the CRDs as they were', async () => {
    const up = await run(helm, [
      'upgrade', 'sluice', chart(join(work, 'next'), '0.2.0', current()),
      '--namespace', NS, '--kubeconfig', server.kubeconfig,
    ]); // prettier-ignore
    expect([up.code, up.out]).toEqual([0, expect.stringContaining('has been upgraded')]);
    for (const name of crdNames) expect([name, (await metaOf(name)).generation]).toEqual([name, installedGeneration[name]]);
    const schema = (await crds.readCustomResourceDefinition({ name: PIPELINE_CRD })).spec.versions[0]!.schema!;
    expect(Object.keys(schema.openAPIV3Schema!.properties!.spec!.properties!)).not.toContain('smtName');
    // So the new field is still pruned: the upgrade has not happened.
    expect((await patch(1, { spec: { smtName: 'too-early' } })).spec.smtName).toBeUndefined();
    kept = await read(1);
  });

  it('kubectl apply --server-side without --force-conflicts is refused: Helm owns the CRDs', async () => {
    const refused = await refusal(applyCrds(false, PIPELINE_FILE));
    expect(refused.code).toBe(409);
    expect(refused.body).toContain('conflict with \\"helm\\"');
    expect(await metaOf(PIPELINE_CRD)).toMatchObject({ generation: installedGeneration[PIPELINE_CRD] });
  });

  it('kubectl apply --server-side --force-conflicts -f crds/ installs the current CRDs', async () => {
    await applyCrds(true);
    for (const file of files) {
      const want = loadYaml<V1CustomResourceDefinition>(readFileSync(join(CRD_DIR, file), 'utf8'));
      const got = await established(want.metadata!.name!);
      // The served CRD is the file's (plus what the server defaults).
      expect(got.spec).toMatchObject({ ...want.spec });
      // Only the changed CRD gets a new generation; the same content is no change.
      const bump = file === PIPELINE_FILE ? 1 : 0;
      expect([file, got.metadata!.generation]).toEqual([file, installedGeneration[got.metadata!.name!]! + bump]);
      // kubectl get crd <name> -o jsonpath='{.spec.versions[*].name}' and '{.status.storedVersions}'
      expect(got.spec.versions.map((v) => v.name)).toEqual([VERSION]);
      expect(got.status?.storedVersions).toEqual([VERSION]);
    }
    const specProps = (await crds.readCustomResourceDefinition({ name: PIPELINE_CRD })).spec.versions[0]!.schema!
      .openAPIV3Schema!.properties!.spec!.properties!;
    // The removed field is gone from the schema, though Helm had created it.
    expect(Object.keys(specProps)).not.toContain('legacyNote');
    expect(specProps.name!.pattern).toBe('^[A-Za-z0-9_-]+$');
  });

  it('stored objects are not rewritten: same resourceVersion, spec and status; a removed field no longer shows', async () => {
    const after = await read(1);
    expect(after.metadata.resourceVersion).toBe(kept.metadata.resourceVersion);
    expect(after.metadata.generation).toBe(kept.metadata.generation);
    expect(after.status).toEqual(kept.status);
    const { legacyNote, ...rest } = kept.spec;
    expect(legacyNote).toBe('from the previous release');
    // Pruned when read (and dropped from etcd at the next write of the object).
    expect(after.spec).toEqual(rest);
  });

  it('new fields and enum values are accepted', async () => {
    const before = await read(1);
    const after = await patch(1, { spec: { smtName: 'enrich-orders', desiredState: 'draft' } });
    expect(after.spec).toMatchObject({ smtName: 'enrich-orders', desiredState: 'draft' });
    expect(after.metadata.generation).toBe(before.metadata.generation + 1);
    const fresh = await create(pipeline(4, { smtName: 'mask-emails', desiredState: 'draft' }));
    expect((await read(4)).spec).toEqual(fresh.spec);
    expect(fresh.spec.smtName).toBe('mask-emails');
  });

  it('the new validation is enforced on new writes', async () => {
    const refused = await refusal(create(pipeline(5, { name: 'has spaces' })));
    expect(refused.code).toBe(422);
    expect(refused.body).toContain('spec.name');
    expect(refused.body).toContain('^[A-Za-z0-9_-]+$');
    await expect(read(5)).rejects.toMatchObject({ code: 404 });
  });

  it('an object stored before that the new rule refuses stays readable and writable (validation ratcheting)', async () => {
    const legacy = await read(2);
    expect(legacy.spec.name).toBe('orders to dwh');
    // Writes that leave the invalid field as it is are accepted, status included.
    const status = await patchStatus(2, { status: { state: 'error', message: 'Worker exited' } });
    expect(status.status).toMatchObject({ state: 'error', message: 'Worker exited' });
    expect((await patch(2, { spec: { version: 2 } })).spec).toMatchObject({ name: 'orders to dwh', version: 2 });
    // Changing it to another invalid value is not.
    const refused = await refusal(patch(2, { spec: { name: 'still not valid' } }));
    expect(refused.code).toBe(422);
    expect((await patch(2, { spec: { name: 'orders-to-dwh' } })).spec.name).toBe('orders-to-dwh');
  });

  it('the status subresource still works: status through /status only, generation unchanged', async () => {
    const before = await read(1);
    const written = await patchStatus(1, {
      spec: { smtName: 'not-through-status' },
      status: { state: 'live', observedGeneration: before.metadata.generation, message: '' },
    });
    expect(written.status).toMatchObject({ state: 'live', observedGeneration: before.metadata.generation });
    expect(written.spec).toEqual(before.spec);
    expect(written.metadata.generation).toBe(before.metadata.generation);
    // And a spec write ignores status.
    const specWrite = await patch(1, { spec: { version: 2 }, status: { state: 'error' } });
    expect(specWrite.status.state).toBe('live');
    const refused = await refusal(patchStatus(1, { status: { state: 'exploded' } }));
    expect(refused.code).toBe(422);
  });

  it('kubectl get pipelines shows the printer columns of the new CRD', async () => {
    const table: Any = await custom.listNamespacedCustomObject(pipelines, AS_TABLE);
    expect(table.kind).toBe('Table');
    const columns = (table.columnDefinitions as { name: string }[]).map((c) => c.name);
    expect(columns).toEqual(expect.arrayContaining(['Display Name', 'State', 'Ready', 'Age']));
    const row = (table.rows as { cells: unknown[]; object: Any }[]).find((r) => r.object.metadata.name === uuid(1));
    expect(row?.cells[columns.indexOf('State')]).toBe('live');
    // The first column is always metadata.name; the CRD's own columns follow.
    expect(row?.cells[0]).toBe(uuid(1));
    expect(row?.cells).toContain('orders-1');
  });

  it('applying the same CRDs again changes nothing: resourceVersion and generation of every CRD', async () => {
    const before = new Map<string, Any>();
    for (const name of crdNames) before.set(name, await metaOf(name));
    // Now that kubectl owns the fields, no --force-conflicts is needed either.
    await applyCrds(false);
    await applyCrds(true);
    for (const name of crdNames) {
      const after = await metaOf(name);
      expect([name, after.resourceVersion, after.generation]).toEqual([
        name,
        before.get(name).resourceVersion,
        before.get(name).generation,
      ]);
    }
  });
});
