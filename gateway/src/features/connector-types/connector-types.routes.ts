import { CONNECTOR_TYPES, ConnectorTypeList, connectorTypeRead } from '@sluice/shared/connectors';
import { ok, route, type AnyRoute } from '../../http/route.js';

/**
 * Spec 4.5: `GET /connector-types/` lists every connector type with its form
 * fields and the JSON Schema of its `json_configuration`, all derived from the
 * registry in @sluice/shared. The list is static for a build, so it is built
 * once; any authenticated user may read it.
 */
export function connectorTypeRoutes(): AnyRoute[] {
  const list = CONNECTOR_TYPES.map(connectorTypeRead);
  return [
    route({
      method: 'get',
      path: '/connector-types/',
      tag: 'connectors',
      auth: 'user',
      summary: 'Every connector type with its form fields and configuration schema',
      description:
        'Form fields are derived from each json_configuration schema: `secret` fields accept an inline value or `{"valueFrom": {"secretKeyRef": {"name", "key"}}}` and read back as `<redacted>`; `required_when` lists the conditions that make an optional field required. `topics_config_key` names the capture list (`whitelist` or `topic`); a `cdc` source refuses an empty one.',
      responses: { 200: { description: 'The connector types', schema: ConnectorTypeList } },
      handler: async () => ok(list),
    }),
  ];
}
