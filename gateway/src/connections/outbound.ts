import { type OutboundPolicy } from '@sluice/shared/net';
import { controlPlaneOutboundPolicy } from '@sluice/shared/warehouses';
import type { GatewayContext } from '../context.js';

// The gateway's own outbound connections (pre-flight checks, previews,
// backfills, schema discovery, capture release, slot measurements): every
// one goes through the address policy built from the gateway's settings, and
// is bounded by one deadline. Through an SSH bastion the policy applies to
// the bastion, the one address dialled (docs/ssh-tunnels.md).

/** Deadline of one connection's work (connect, authenticate, answer). */
export const CONNECTION_TIMEOUT_MS = 10_000;

/** The outbound-address policy of the gateway's own calls (SLUICE_OUTBOUND_DENY_CIDRS / _ALLOW_CIDRS). */
export function outboundPolicy(ctx: Pick<GatewayContext, 'config'>): OutboundPolicy {
  return controlPlaneOutboundPolicy(ctx.config.outbound);
}
