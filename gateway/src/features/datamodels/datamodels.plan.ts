import {
  CONNECTOR_LABEL,
  TEAM_LABEL,
  type ConnectorResource,
  type DataModelResource,
  type DataModelSpec,
} from '@sluice/shared/catalog';
import { connectorType } from '@sluice/shared/connectors';
import type { CatalogStore } from '../../catalog/store.js';

/** The capture list of a source configuration (spec 2.7): `whitelist` entries, or the one `topic`. */
export function captureEntries(type: string, config: Record<string, unknown>): string[] {
  const key = connectorType(type)?.topics_config_key;
  if (key === 'whitelist') {
    const list = config.whitelist;
    return Array.isArray(list) ? list.filter((e): e is string => typeof e === 'string') : [];
  }
  if (key === 'topic') return typeof config.topic === 'string' ? [config.topic] : [];
  return [];
}

/** Spec 2.8: `{connector name}_{entry}`. */
export const datamodelName = (connectorName: string, entry: string) => `${connectorName}_${entry}`;

/**
 * The data model objects of `entries` for a connector (one per entry,
 * enabled, no error table), in the connector's namespace.
 */
export function datamodelObjects(
  catalog: CatalogStore,
  connector: Pick<ConnectorResource, 'metadata' | 'spec'>,
  entries: string[],
): DataModelResource[] {
  return entries.map((entry) => {
    const spec: DataModelSpec = {
      name: datamodelName(connector.spec.name, entry),
      teamId: connector.spec.teamId,
      connectorId: connector.metadata.name,
      entry,
      enabled: true,
      errorTable: { enabled: false },
    };
    const labels = { [TEAM_LABEL]: connector.spec.teamId, [CONNECTOR_LABEL]: connector.metadata.name };
    return catalog.object(
      'DataModel',
      spec,
      labels,
      undefined,
      connector.metadata.namespace,
    ) as DataModelResource;
  });
}
