import { API_GROUP, API_VERSION } from '../util/version.js';
import type { SluiceKind } from '../ports/cluster.js';

// The Argo CD health checks of the five kinds (charts/sluice/argocd/<group>/<Kind>/health.lua),
// built from one template and a part per kind: the header's frame, the helpers, the rules every
// kind applies first (`common`) and the `hs` table Argo CD reads are the template's; what the
// kind's status means (its header lines and the rest of `health(o)`) is its part.
// `npm run gen:argocd` writes them; argocd-health.test.ts fails when a committed script differs.
// Only Lua's base and table libraries may be used (an argocd-cm check gets no others).

/** What one kind adds to the template. */
interface HealthCheckPart {
  /** The header's lines above the table (what the kind's fields mean). */
  about: readonly string[];
  /** The header table's rows after the ones every kind shares. */
  rows: readonly string[];
  /** The kind as its messages name it. */
  noun: string;
  /** The body of `health(o)` after the shared rules (Lua, indented by two). */
  body: string;
}

/** The table rows of the rules in `common`, which every check applies first. */
const SHARED_ROWS = [
  '  being deleted                               Progressing "Being deleted..."',
  '  no status                                   Progressing "Waiting for the operator"',
  '  metadata.generation > status.observedGeneration',
  '                                              Progressing',
];

/** The helpers every check holds between these markers (e2e/argocd-health.test.ts checks they agree). */
const HELPERS = `-- BEGIN shared helpers
-- Helpers, the same in every sluice.dev health check. Only Lua's base and
-- table libraries are used: an argocd-cm health key runs without the string,
-- math and os libraries unless resource.customizations.useOpenLibs is set.

local function nonEmpty(s)
  return s ~= nil and s ~= ""
end

local function first(a, b, c)
  if nonEmpty(a) then
    return a
  end
  if nonEmpty(b) then
    return b
  end
  return c
end

-- The status condition of that type, unless it was set for an older generation.
local function condition(o, ctype)
  if o.status == nil or o.status.conditions == nil then
    return nil
  end
  local generation = tonumber((o.metadata or {}).generation)
  for _, c in ipairs(o.status.conditions) do
    if c.type == ctype then
      local observed = tonumber(c.observedGeneration)
      if generation ~= nil and observed ~= nil and observed < generation then
        return nil
      end
      return c
    end
  end
  return nil
end

local function isTrue(c)
  return c ~= nil and c.status == "True"
end

-- The message of a Ready condition that is not True.
local function notReady(o)
  local ready = condition(o, "Ready")
  if ready ~= nil and not isTrue(ready) then
    return ready.message
  end
  return nil
end

-- Why the object is not there yet: the message of a Progressing=True
-- condition, or of a Ready condition that is not True.
local function withDetail(message, o)
  local progressing = condition(o, "Progressing")
  local why = notReady(o)
  if isTrue(progressing) and nonEmpty(progressing.message) then
    why = progressing.message
  end
  if nonEmpty(why) then
    return message .. ": " .. why
  end
  return message
end

-- The rules every kind shares, in this order: being deleted (deletion bumps
-- metadata.generation, so it comes before the generation rule), no status yet,
-- a generation the operator has not observed, a Degraded=True condition.
-- Returns nil when none applies.
local function common(o, kind)
  local meta = o.metadata or {}
  if meta.deletionTimestamp ~= nil then
    local message = "Being deleted"
    if meta.finalizers ~= nil and #meta.finalizers > 0 then
      message = message .. "; waiting for finalizers: " .. table.concat(meta.finalizers, ", ")
    end
    return "Progressing", message
  end
  local st = o.status
  if st == nil or next(st) == nil then
    return "Progressing", "Waiting for the operator"
  end
  local generation = tonumber(meta.generation)
  local observed = tonumber(st.observedGeneration)
  if generation ~= nil and (observed == nil or observed < generation) then
    return "Progressing", "Waiting for the operator to observe generation " .. generation
  end
  local degraded = condition(o, "Degraded")
  if isTrue(degraded) then
    return "Degraded", first(degraded.message, st.message, kind .. " is degraded")
  end
  return nil
end
-- END shared helpers`;

/** What Argo CD reads: the script's result. */
const RESULT = `local hs = {}
hs.status, hs.message = health(obj)
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  -- Argo CD 3.6+ replaces the health of a terminating object unless the check
  -- sets deletionMessage; older versions show status and message.
  hs.deletionMessage = hs.message
end
return hs`;

/** The table rows of a kind without a state of its own, after its Degraded and disabled rows. */
const IDLE_ROWS = [
  '  Ready=True                                  Healthy',
  '  Ready=False and Progressing=False           Suspended: nothing flows, nothing is',
  '                                              under way and nothing is wrong (the',
  '                                              operator\'s word for "its connector',
  '                                              is stopped", e.g. a paused pipeline)',
  '  anything else                               Progressing',
];

/**
 * `health(o)` of a kind without a state of its own (its health is its
 * conditions): `disabled` returns Suspended when it is switched off.
 */
function fromConditions(noun: string, disabled: string): string {
  return `${disabled}
  local ready = condition(o, "Ready")
  if isTrue(ready) then
    return "Healthy", first(ready.message, nil, "${noun} is ready")
  end
  local progressing = condition(o, "Progressing")
  if ready ~= nil and ready.status == "False" and progressing ~= nil and progressing.status == "False" then
    -- Not ready, nothing under way, nothing wrong: its connector is stopped.
    if nonEmpty(ready.message) then
      return "Suspended", "${noun} is idle: " .. ready.message
    end
    return "Suspended", "${noun} is idle"
  end
  return "Progressing", withDetail("${noun} is not ready yet", o)`;
}

const PARTS: Record<SluiceKind, HealthCheckPart> = {
  Connector: {
    about: [
      'spec.desiredState: running | stopped (set by start/stop)',
      'status.effectiveState: running | stopped, what the operator converges to (its',
      '  own desiredState, or that of a running pipeline that uses it); the desired',
      '  state below, spec.desiredState only while the operator has not written it',
      'status.state: paused | building | live | stopping | error (interface spec 3.2)',
    ],
    rows: [
      "  Degraded=True, or state error               Degraded, with the worker's message",
      '  state paused, desired state not running     Suspended (stopped on purpose)',
      '  state live, Ready=True, desired not stopped Healthy',
      '  anything else (building, stopping, paused while desired running,',
      '  live while desired stopped, live but not Ready)',
      '                                              Progressing "Connector is <state>..."',
    ],
    noun: 'Connector',
    body: `  local st = o.status
  local state = st.state
  -- A pipeline runs a connector declared stopped: its effective state counts.
  local desired = first(st.effectiveState, (o.spec or {}).desiredState, nil)
  local ready = condition(o, "Ready")
  if state == "error" then
    return "Degraded", first(st.message, notReady(o), "Connector is in error")
  end
  if state == "paused" and desired ~= "running" then
    return "Suspended", "Connector is paused"
  end
  if state == "live" and desired ~= "stopped" and isTrue(ready) then
    return "Healthy", first(ready.message, nil, "Connector is live")
  end
  if state == nil then
    return "Progressing", withDetail("Waiting for the connector's state", o)
  end
  message = "Connector is " .. state
  if (state == "paused" and desired == "running") or (state == "live" and desired == "stopped") then
    message = message .. ", desired state " .. desired
  end
  return "Progressing", withDetail(message, o)`,
  },
  DataModel: {
    about: [
      'A DataModel (capture of one entry of a source connector)',
      'has no state of its own (interface spec 3.2: "not shown"): its health comes',
      'from its conditions, which the operator derives from its connector, and',
      'from spec.enabled.',
    ],
    rows: [
      '  Degraded=True                               Degraded, with its message',
      '  spec.enabled false                          Suspended (disabled on purpose)',
      ...IDLE_ROWS,
    ],
    noun: 'Data model',
    body: fromConditions(
      'Data model',
      `  if (o.spec or {}).enabled == false then
    return "Suspended", "Data model is disabled: its entry is not captured"
  end`,
    ),
  },
  Subscription: {
    about: [
      'A Subscription (delivery of one data model to one target connector)',
      'has no state of its own (interface spec 3.2: "not shown"): its health comes',
      'from its conditions, which the operator derives from its connector, and',
      'from whether it is enabled: status.effectiveState (enabled | disabled: its',
      'own switch, or that of a pipeline that uses it), spec.enabled only while the',
      'operator has not written it.',
    ],
    rows: [
      '  Degraded=True                               Degraded, with its message',
      '  disabled (effectively)                      Suspended (disabled on purpose)',
      ...IDLE_ROWS,
    ],
    noun: 'Subscription',
    body: fromConditions(
      'Subscription',
      `  -- A running pipeline delivers a subscription declared disabled.
  local effective = (o.status or {}).effectiveState
  if effective == "disabled" or (effective == nil and (o.spec or {}).enabled == false) then
    return "Suspended", "Subscription is disabled: nothing is delivered to its target"
  end`,
    ),
  },
  Pipeline: {
    about: [
      'spec.desiredState: draft | running | paused (set by start/pause)',
      'status.state: draft | building | live | paused | error (interface spec 3.1)',
      '',
      "The operator summarises the pipeline's connectors and subscription in the",
      "Pipeline's own status (Argo CD does not pass a child's health up to its",
      "parent), so this check reads only the Pipeline's status.",
    ],
    rows: [
      "  Degraded=True, or state error               Degraded, with the worker's message",
      '  state paused, desired state not running     Suspended (paused on purpose)',
      '  state draft, desired state not running      Suspended: nothing runs until the',
      '                                              pipeline is started, and nothing',
      "                                              will happen without a user's call",
      '  state live, Ready=True, desired running     Healthy',
      '  anything else (building, draft or paused while desired running, live',
      '  while desired paused, live but not Ready)   Progressing "Pipeline is <state>..."',
    ],
    noun: 'Pipeline',
    body: `  local st = o.status
  local state = st.state
  local desired = (o.spec or {}).desiredState
  local ready = condition(o, "Ready")
  if state == "error" then
    return "Degraded", first(st.message, notReady(o), "Pipeline is in error")
  end
  if state == "paused" and desired ~= "running" then
    return "Suspended", "Pipeline is paused"
  end
  if state == "draft" and desired ~= "running" then
    return "Suspended", "Pipeline is a draft: nothing runs until it is started"
  end
  if state == "live" and (desired == nil or desired == "running") and isTrue(ready) then
    return "Healthy", first(ready.message, nil, "Pipeline is live")
  end
  if state == nil then
    return "Progressing", withDetail("Waiting for the pipeline's state", o)
  end
  message = "Pipeline is " .. state
  local idle = state == "draft" or state == "paused"
  if desired ~= nil and ((state == "live" and desired ~= "running") or (idle and desired == "running")) then
    message = message .. ", desired state " .. desired
  end
  return "Progressing", withDetail(message, o)`,
  },
  Warehouse: {
    about: [
      'No desired state, no worker: status.state is the verdict of the last',
      'connection test, Draft (never tested) | Live | Error (interface spec 3.3).',
    ],
    rows: [
      "  Degraded=True, or state Error               Degraded, with the engine's message",
      '  state Live, Ready=True                      Healthy',
      '  anything else (Draft, Live but not Ready)   Progressing',
      '',
      'A warehouse cannot be paused: it is never Suspended.',
    ],
    noun: 'Warehouse',
    body: `  local st = o.status
  local state = st.state
  local ready = condition(o, "Ready")
  if state == "Error" then
    return "Degraded", first(st.message, notReady(o), "The last connection test failed")
  end
  if state == "Live" and isTrue(ready) then
    if nonEmpty(st.testedAt) then
      return "Healthy", "The last connection test succeeded (" .. st.testedAt .. ")"
    end
    return "Healthy", "The last connection test succeeded"
  end
  if state == nil or state == "Draft" then
    return "Progressing", withDetail("Waiting for a connection test", o)
  end
  return "Progressing", withDetail("Warehouse is " .. state, o)`,
  },
};

const comment = (line: string) => (line === '' ? '--' : `-- ${line}`);

/** The health.lua of a kind, as committed under charts/sluice/argocd/. */
export function renderHealthCheck(kind: SluiceKind): string {
  const part = PARTS[kind];
  return [
    comment(`Argo CD health check for ${API_GROUP}/${API_VERSION} ${kind}.`),
    '--',
    ...part.about.map(comment),
    '--',
    ...[...SHARED_ROWS, ...part.rows].map(comment),
    '',
    HELPERS,
    '',
    'local function health(o)',
    `  local status, message = common(o, "${part.noun}")`,
    '  if status ~= nil then',
    '    return status, message',
    '  end',
    part.body,
    'end',
    '',
    RESULT,
    '',
  ].join('\n');
}

/** Where a kind's check lives in a resource_customizations-style tree. */
export const healthCheckPath = (kind: SluiceKind) => `${API_GROUP}/${kind}/health.lua`;
