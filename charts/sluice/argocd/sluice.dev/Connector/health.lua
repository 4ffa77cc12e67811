-- Argo CD health check for sluice.dev/v1alpha1 Connector.
--
-- spec.desiredState: running | stopped (set by start/stop)
-- status.effectiveState: running | stopped, what the operator converges to (its
--   own desiredState, or that of a running pipeline that uses it); the desired
--   state below, spec.desiredState only while the operator has not written it
-- status.state: paused | building | live | stopping | error (interface spec 3.2)
--
--   being deleted                               Progressing "Being deleted..."
--   no status                                   Progressing "Waiting for the operator"
--   metadata.generation > status.observedGeneration
--                                               Progressing
--   Degraded=True, or state error               Degraded, with the worker's message
--   state paused, desired state not running     Suspended (stopped on purpose)
--   state live, Ready=True, desired not stopped Healthy
--   anything else (building, stopping, paused while desired running,
--   live while desired stopped, live but not Ready)
--                                               Progressing "Connector is <state>..."

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
  local status, message = common(o, "Connector")
  if status ~= nil then
    return status, message
  end
  local st = o.status
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
  return "Progressing", withDetail(message, o)
end

local hs = {}
hs.status, hs.message = health(obj)
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  -- Argo CD 3.6+ replaces the health of a terminating object unless the check
  -- sets deletionMessage; older versions show status and message.
  hs.deletionMessage = hs.message
end
return hs
