-- Argo CD health check for sluice.dev/v1alpha1 Subscription.
--
-- A Subscription (delivery of one data model to one target connector)
-- has no state of its own (interface spec 3.2: "not shown"): its health comes
-- from its conditions, which the operator derives from its connector, and
-- from whether it is enabled: status.effectiveState (enabled | disabled: its
-- own switch, or that of a pipeline that uses it), spec.enabled only while the
-- operator has not written it.
--
--   being deleted                               Progressing "Being deleted..."
--   no status                                   Progressing "Waiting for the operator"
--   metadata.generation > status.observedGeneration
--                                               Progressing
--   Degraded=True                               Degraded, with its message
--   disabled (effectively)                      Suspended (disabled on purpose)
--   Ready=True                                  Healthy
--   Ready=False and Progressing=False           Suspended: nothing flows, nothing is
--                                               under way and nothing is wrong (the
--                                               operator's word for "its connector
--                                               is stopped", e.g. a paused pipeline)
--   anything else                               Progressing

-- BEGIN shared helpers
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
-- END shared helpers

local function health(o)
  local status, message = common(o, "Subscription")
  if status ~= nil then
    return status, message
  end
  -- A running pipeline delivers a subscription declared disabled.
  local effective = (o.status or {}).effectiveState
  if effective == "disabled" or (effective == nil and (o.spec or {}).enabled == false) then
    return "Suspended", "Subscription is disabled: nothing is delivered to its target"
  end
  local ready = condition(o, "Ready")
  if isTrue(ready) then
    return "Healthy", first(ready.message, nil, "Subscription is ready")
  end
  local progressing = condition(o, "Progressing")
  if ready ~= nil and ready.status == "False" and progressing ~= nil and progressing.status == "False" then
    -- Not ready, nothing under way, nothing wrong: its connector is stopped.
    if nonEmpty(ready.message) then
      return "Suspended", "Subscription is idle: " .. ready.message
    end
    return "Suspended", "Subscription is idle"
  end
  return "Progressing", withDetail("Subscription is not ready yet", o)
end

local hs = {}
hs.status, hs.message = health(obj)
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  -- Argo CD 3.6+ replaces the health of a terminating object unless the check
  -- sets deletionMessage; older versions show status and message.
  hs.deletionMessage = hs.message
end
return hs
