{{/* Names ---------------------------------------------------------------- */}}

{{- define "sluice.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* "<release>-sluice", or the release name alone when it already contains the chart name. */}}
{{- define "sluice.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* "<fullname>-<component>", within 63 characters. Call with (list $ "gateway"). */}}
{{- define "sluice.componentName" -}}
{{- $root := index . 0 }}
{{- printf "%s-%s" (include "sluice.fullname" $root | trunc (sub 62 (len (index . 1)) | int)) (index . 1) | trimSuffix "-" }}
{{- end }}

{{- define "sluice.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels ---------------------------------------------------------------- */}}

{{- define "sluice.labels" -}}
helm.sh/chart: {{ include "sluice.chart" . }}
{{ include "sluice.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sluice
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "sluice.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sluice.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of one component. Call with (list $ "gateway"). */}}
{{- define "sluice.componentLabels" -}}
{{ include "sluice.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{- define "sluice.componentSelectorLabels" -}}
{{ include "sluice.selectorLabels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Service accounts ------------------------------------------------------ */}}

{{/* The service account of a component. Call with (list $ "gateway"). */}}
{{- define "sluice.serviceAccountName" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $values := index $root.Values (ternary "workers" $component (eq $component "worker")) }}
{{- if $values.serviceAccount.name }}
{{- $values.serviceAccount.name }}
{{- else if $values.serviceAccount.create }}
{{- include "sluice.componentName" (list $root $component) }}
{{- else }}
{{- "default" }}
{{- end }}
{{- end }}

{{/* Images ---------------------------------------------------------------- */}}

{{/* "repository:tag" or "repository@digest" of a component. Call with (list $ .Values.gateway.image). */}}
{{- define "sluice.image" -}}
{{- $root := index . 0 }}
{{- $own := index . 1 }}
{{- $repository := default $root.Values.image.repository $own.repository }}
{{- $digest := default $root.Values.image.digest $own.digest }}
{{- if $digest }}
{{- printf "%s@%s" $repository $digest }}
{{- else }}
{{- printf "%s:%s" $repository (default (default $root.Chart.AppVersion $root.Values.image.tag) $own.tag) }}
{{- end }}
{{- end }}

{{- define "sluice.imagePullPolicy" -}}
{{- $root := index . 0 }}
{{- default $root.Values.image.pullPolicy (index . 1).pullPolicy }}
{{- end }}

{{/* Secrets --------------------------------------------------------------- */}}

{{/* The Secret the chart generates for the master key and the JWT secret. */}}
{{- define "sluice.keysSecretName" -}}
{{- include "sluice.componentName" (list . "keys") }}
{{- end }}

{{- define "sluice.databaseSecretName" -}}
{{- if .Values.postgresql.existingSecret }}
{{- .Values.postgresql.existingSecret }}
{{- else }}
{{- include "sluice.componentName" (list . "database") }}
{{- end }}
{{- end }}

{{- define "sluice.databaseSecretKey" -}}
{{- ternary .Values.postgresql.existingSecretKey "database-url" (ne .Values.postgresql.existingSecret "") }}
{{- end }}

{{/* Fails the render when no database is given: without one the gateway would
     fall back to an embedded database on an emptyDir and lose its data. */}}
{{- define "sluice.requireDatabase" -}}
{{- if and (not .Values.postgresql.url) (not .Values.postgresql.existingSecret) }}
{{- fail "sluice: set postgresql.url or postgresql.existingSecret (the gateway needs an external PostgreSQL database; README.md, \"Database\")" }}
{{- end }}
{{- if and .Values.postgresql.url .Values.postgresql.existingSecret }}
{{- fail "sluice: set only one of postgresql.url and postgresql.existingSecret" }}
{{- end }}
{{- end }}

{{/* Namespaces ------------------------------------------------------------ */}}

{{/* Namespaces whose sluice.dev objects are reconciled, release namespace first. */}}
{{- define "sluice.watchNamespaces" -}}
{{- $all := list .Release.Namespace }}
{{- range .Values.rbac.extraNamespaces }}
{{- if not (has . $all) }}
{{- $all = append $all . }}
{{- end }}
{{- end }}
{{- join "," $all }}
{{- end }}

{{/* The worker namespace: workers.namespace, or "<release namespace>-workers". */}}
{{- define "sluice.workerNamespace" -}}
{{- $ns := default (printf "%s-workers" .Release.Namespace) .Values.workers.namespace }}
{{- if gt (len $ns) 63 }}
{{- fail (printf "sluice: the worker namespace %q is longer than 63 characters: set workers.namespace" $ns) }}
{{- end }}
{{- $ns }}
{{- end }}

{{/* Whether workers live apart from the control plane (the default layout). */}}
{{- define "sluice.workersApart" -}}
{{- if ne (include "sluice.workerNamespace" .) .Release.Namespace }}true{{ end }}
{{- end }}

{{/* SLUICE_WATCH_NAMESPACES: "*" in cluster scope, else the list above. */}}
{{- define "sluice.watchNamespacesEnv" -}}
{{- if .Values.rbac.clusterScope }}*{{ else }}{{ include "sluice.watchNamespaces" . }}{{ end }}
{{- end }}

{{/* Pod parts ------------------------------------------------------------- */}}

{{- define "sluice.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Scheduling fields of a pod spec. Call with a component's values. */}}
{{- define "sluice.scheduling" -}}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Downward API: the pod's namespace and name. */}}
{{- define "sluice.podIdentityEnv" -}}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- end }}

{{/* A PodDisruptionBudget spec body: minAvailable when set, else maxUnavailable.
     Call with (list $ "gateway" .Values.gateway.podDisruptionBudget). */}}
{{- define "sluice.pdbSpec" -}}
{{- $pdb := index . 2 }}
{{- if not (kindIs "invalid" $pdb.minAvailable) }}
minAvailable: {{ $pdb.minAvailable }}
{{- else if not (kindIs "invalid" $pdb.maxUnavailable) }}
maxUnavailable: {{ $pdb.maxUnavailable }}
{{- else }}
maxUnavailable: 1
{{- end }}
selector:
  matchLabels:
    {{- include "sluice.componentSelectorLabels" (list (index . 0) (index . 1)) | nindent 4 }}
{{- end }}

{{/* The label of the control plane's own Secrets: no secret field may reference them. */}}
{{- define "sluice.controlPlaneLabel" -}}
sluice.dev/control-plane: "true"
{{- end }}

{{/* DATABASE_URL, SLUICE_MASTER_KEY and SLUICE_JWT_SECRET from their Secrets. */}}
{{- define "sluice.secretEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "sluice.databaseSecretName" . }}
      key: {{ include "sluice.databaseSecretKey" . }}
- name: SLUICE_MASTER_KEY
  valueFrom:
    secretKeyRef:
      name: {{ default (include "sluice.keysSecretName" .) .Values.masterKey.existingSecret }}
      key: {{ ternary .Values.masterKey.existingSecretKey "master-key" (ne .Values.masterKey.existingSecret "") }}
- name: SLUICE_JWT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ default (include "sluice.keysSecretName" .) .Values.jwtSecret.existingSecret }}
      key: {{ ternary .Values.jwtSecret.existingSecretKey "jwt-secret" (ne .Values.jwtSecret.existingSecret "") }}
{{- end }}

{{/* Environment both the gateway and the operator read: the cluster adapter and namespaces. */}}
{{- define "sluice.clusterEnv" -}}
- name: SLUICE_CLUSTER_ADAPTER
  value: kubernetes
- name: SLUICE_NAMESPACE
  value: {{ .Release.Namespace | quote }}
- name: SLUICE_WORKER_NAMESPACE
  value: {{ include "sluice.workerNamespace" . | quote }}
- name: SLUICE_WATCH_NAMESPACES
  value: {{ include "sluice.watchNamespacesEnv" . | quote }}
{{- end }}
