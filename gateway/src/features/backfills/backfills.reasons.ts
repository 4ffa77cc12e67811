// The reasons an automatic backfill decision gives, where more than the
// decision itself shows them: the subscription read model says why a run is
// still pending without loading the decision's code (and the operator's
// stream client behind it).

/** A switch whose consumer's offsets the gateway has not looked at yet. */
export const LOOKING = "backfill was turned on after the subscription's creation";

/** Why a subscription whose `backfill` was turned on later is replayed. */
export const TURNED_ON_LATER = `${LOOKING}, and its consumer keeps its offsets`;

/** A switch whose consumer had not read the stream yet (no committed offsets). */
export const NOT_READ_YET = "backfill was turned on before the subscription's consumer had read the stream";
