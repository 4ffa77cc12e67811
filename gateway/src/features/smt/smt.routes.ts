import { Type } from '@sinclair/typebox';
import { compileMapper, MapperConfigError, mapperConfigSchema, type MapperRule } from '@sluice/shared/mapper';
import { unprocessable } from '../../http/errors.js';
import { ok, route, type AnyRoute } from '../../http/route.js';

const bodyFields = {
  table_name: Type.String({ minLength: 1, maxLength: 255 }),
  message: Type.Record(Type.String(), Type.Unknown(), { description: 'One JSON message' }),
};
// ajv checks the envelope; the mapper library checks the rules and reports
// every problem of every rule at once (rule index first in `loc`).
const ProcessMapperBody = Type.Object(
  { ...bodyFields, config: Type.Array(Type.Unknown()) },
  { additionalProperties: false },
);
const DocumentedBody = Type.Object(
  { ...bodyFields, config: Type.Unsafe<MapperRule[]>({ ...mapperConfigSchema, $id: 'MapperConfig' }) },
  { $id: 'ProcessMapperBody', additionalProperties: false },
);
const Rows = Type.Array(Type.Record(Type.String(), Type.Unknown()), { $id: 'MapperRows' });

/**
 * Spec 4.7: try a mapper configuration on one message. Any authenticated
 * user may call it. Configuration errors are 422s pointing at the rule;
 * failures on the message itself are not HTTP errors but `error` keys in the
 * rows (spec 2.10, rule 10).
 */
export function smtRoutes(): AnyRoute[] {
  return [
    route({
      method: 'post',
      path: '/smt/process_mapper',
      tag: 'transformations',
      auth: 'user',
      summary: 'Run a mapper configuration on one message and return the rows',
      body: ProcessMapperBody,
      documentedBody: DocumentedBody,
      responses: { 200: { description: 'The rows the mapper produced', schema: Rows } },
      handler: async ({ body }) => {
        try {
          return ok(compileMapper(body.config).apply(body.message));
        } catch (err) {
          if (err instanceof MapperConfigError) {
            throw unprocessable(err.issues.map((i) => ({ ...i, loc: ['body', 'config', ...i.loc] })));
          }
          throw err;
        }
      },
    }),
  ];
}
