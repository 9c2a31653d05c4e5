{{- define "konductor.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the release name alone when it already holds the chart's name. */}}
{{- define "konductor.fullname" -}}
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

{{- define "konductor.selectorLabels" -}}
app.kubernetes.io/name: {{ include "konductor.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "konductor.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "konductor.selectorLabels" . }}
app.kubernetes.io/component: controller
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- range $k, $v := .Values.extraLabels }}
{{ $k }}: {{ tpl (toString $v) $ | quote }}
{{- end }}
{{- end }}

{{- define "konductor.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "konductor.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "konductor.image" -}}
{{- if .Values.image.unifiedRepoTag }}
{{- .Values.image.unifiedRepoTag }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag | toString) }}
{{- end }}
{{- end }}

{{/* "name" or "namespace/name" as namespace/name, the release namespace by default. */}}
{{- define "konductor.namespacedName" -}}
{{- if contains "/" .name }}{{ .name }}{{ else }}{{ printf "%s/%s" .namespace .name }}{{ end }}
{{- end }}

{{/*
The controller's settings as CONTROLLER_* variables: those the chart derives from its values,
then .Values.env over them (keys lower-cased, dashes as underscores, so kong-admin-url,
KONG_ADMIN_URL and kong_admin_url are one setting). Rendered in key order.
*/}}
{{- define "konductor.controllerEnv" -}}
{{- $env := dict }}
{{- include "konductor.controllerSettings" (dict "root" . "out" $env) }}
{{- range $k, $v := $env }}
{{ include "konductor.envVar" (dict "name" (printf "CONTROLLER_%s" (upper $k)) "value" $v) }}
{{- end }}
{{- range $k, $v := .Values.customEnv }}
{{ include "konductor.envVar" (dict "name" $k "value" $v) }}
{{- end }}
{{- end }}

{{/*
The controller's settings, written into the dict .out (setting -> value, e.g. kong_admin_svc,
konnect_licensing_enabled): those the chart derives from the values of .root, .Values.env over
them. What konductor.controllerEnv renders, and what the RBAC reads (the Konnect license Role).
*/}}
{{- define "konductor.controllerSettings" -}}
{{- $root := .root }}
{{- $values := $root.Values }}
{{- $env := .out }}
{{- if include "konductor.discovery" $root }}
{{- $svc := $values.gatewayDiscovery.adminService }}
{{- $name := required "gatewayDiscovery.adminService.name is required when gatewayDiscovery.enabled" $svc.name }}
{{- $_ := set $env "kong_admin_svc" (printf "%s/%s" (default $root.Release.Namespace $svc.namespace) $name) }}
{{- with $values.gatewayDiscovery.portNames }}
{{- $_ := set $env "kong_admin_svc_port_names" (join "," .) }}
{{- end }}
{{- else }}
{{- $url := required "kongAdminURL is required when gatewayDiscovery.enabled is false" $values.kongAdminURL }}
{{- if kindIs "slice" $url }}{{ $url = join "," $url }}{{ end }}
{{- $_ := set $env "kong_admin_url" $url }}
{{- end }}
{{- $_ := set $env "ingress_class" (required "ingressClass is required" $values.ingressClass) }}
{{- /* KIC's charts' Lease name, so that a konductor replacing KIC's controller takes over its lease. */}}
{{- $_ := set $env "election_id" (printf "kong-ingress-controller-leader-%s" $values.ingressClass) }}
{{- with $values.watchNamespaces }}
{{- $_ := set $env "watch_namespace" (join "," .) }}
{{- end }}
{{- with $values.publishService }}
{{- $_ := set $env "publish_service" (include "konductor.namespacedName" (dict "namespace" $root.Release.Namespace "name" .)) }}
{{- end }}
{{- if $values.admissionWebhook.enabled }}
{{- $_ := set $env "admission_webhook_listen" (printf "%s:%v" (default "" $values.admissionWebhook.address) $values.admissionWebhook.port) }}
{{- end }}
{{- if kindIs "bool" $values.leaderElection.enabled }}
{{- $_ := set $env "leader_elect" $values.leaderElection.enabled }}
{{- end }}
{{- $konnect := default dict $values.konnect }}
{{- if $konnect.enabled }}
{{- /* As KIC's charts (kong/kong's _helpers.tpl, kong.ingressController.env): sync on, the
       control plane (controlPlaneID, else KIC's older runtimeGroupID), https://<apiHostname>, the
       client certificate from the Secret's tls.crt and tls.key, and licensing with
       license.enabled. */}}
{{- $_ := set $env "konnect_sync_enabled" true }}
{{- with (default $konnect.runtimeGroupID $konnect.controlPlaneID) }}
{{- $_ := set $env "konnect_control_plane_id" (toString .) }}
{{- end }}
{{- with $konnect.apiHostname }}
{{- $_ := set $env "konnect_address" (printf "https://%s" .) }}
{{- end }}
{{- with $konnect.tlsClientCertSecretName }}
{{- $_ := set $env "konnect_tls_client_cert" (dict "valueFrom" (dict "secretKeyRef" (dict "name" . "key" "tls.crt"))) }}
{{- $_ := set $env "konnect_tls_client_key" (dict "valueFrom" (dict "secretKeyRef" (dict "name" . "key" "tls.key"))) }}
{{- end }}
{{- if dig "license" "enabled" false $konnect }}
{{- $_ := set $env "konnect_licensing_enabled" true }}
{{- end }}
{{- end }}
{{- range $k, $v := $values.env }}
{{- $_ := set $env ($k | lower | replace "-" "_") $v }}
{{- end }}
{{- if and $konnect.enabled (not (or (get $env "konnect_control_plane_id") (get $env "konnect_runtime_group_id"))) }}
{{- fail "konnect.controlPlaneID is required when konnect.enabled (KIC's charts: ingressController.konnect.controlPlaneID, or its older runtimeGroupID; or env.konnect_control_plane_id)" }}
{{- end }}
{{- end }}

{{/*
The Secret the Konnect license is kept in, from the controller's settings (konductor.controllerSettings,
the dict given): konnect-license-<control plane ID> when licensing is on with its storage (on
unless konnect_license_storage_enabled is false), "*" when the control plane's ID is not in the
values (a valueFrom), "" when nothing is stored. The later of the two flags naming the control
plane wins, as the controller applies its variables in flag order (--konnect-runtime-group-id
after --konnect-control-plane-id).
*/}}
{{- define "konductor.konnectLicenseSecret" -}}
{{- $true := list "1" "t" "true" -}}
{{- $licensing := has (toString (get . "konnect_licensing_enabled") | lower) $true -}}
{{- $storage := or (not (hasKey . "konnect_license_storage_enabled")) (has (toString (get . "konnect_license_storage_enabled") | lower) $true) -}}
{{- if and $licensing $storage -}}
  {{- $cp := get . "konnect_runtime_group_id" | default (get . "konnect_control_plane_id") -}}
  {{- if or (kindIs "map" $cp) (not $cp) -}}
*
  {{- else -}}
konnect-license-{{ $cp }}
  {{- end -}}
{{- end -}}
{{- end }}

{{/* One EnvVar: a scalar value, or a map holding valueFrom. */}}
{{- define "konductor.envVar" -}}
- name: {{ .name }}
{{- if kindIs "map" .value }}
{{- toYaml .value | nindent 2 }}
{{- else }}
  value: {{ toString .value | quote }}
{{- end }}
{{- end }}

{{/*
RBAC rules, read from files/rbac/ (copies of config/rbac; `make chart-sync`). With "keep", only
the rules' resources in that list, rules left empty dropped.
*/}}
{{- define "konductor.rules" -}}
{{- $doc := .root.Files.Get (printf "files/rbac/%s" .file) | fromYaml }}
{{- $rules := required (printf "files/rbac/%s has no rules: run make chart-sync" .file) $doc.rules }}
{{- if hasKey . "keep" }}
{{- $out := list }}
{{- range $rules }}
{{- $res := list }}
{{- range .resources }}
{{- if has . $.keep }}{{ $res = append $res . }}{{ end }}
{{- end }}
{{- if $res }}{{ $out = append $out (set (deepCopy .) "resources" $res) }}{{ end }}
{{- end }}
{{- $rules = $out }}
{{- end }}
{{- toYaml $rules }}
{{- end }}

{{/*
The cluster-scoped resources among the ClusterRole's: with watchNamespaces they are granted
through a ClusterRoleBinding, everything else through RoleBindings. A test checks this list
against the API server's discovery.
*/}}
{{- define "konductor.clusterScopedResources" -}}
ingressclasses,kongclusterplugins,kongvaults,konglicenses,kongclusterplugins/status,kongvaults/status,konglicenses/status,gatewayclasses,gatewayclasses/status,namespaces,customresourcedefinitions
{{- end }}

{{/*
Namespaces outside watchNamespaces where the controller still needs Services and events: its
own (the Pod's events) and the publishService's. Comma-separated.
*/}}
{{- define "konductor.ownNamespaces" -}}
{{- $out := list .Release.Namespace }}
{{- with .Values.publishService }}
{{- $out = append $out (include "konductor.namespacedName" (dict "namespace" $.Release.Namespace "name" .) | splitList "/" | first) }}
{{- end }}
{{- $res := list }}
{{- range ($out | uniq) }}
{{- if not (has . $.Values.watchNamespaces) }}{{ $res = append $res . }}{{ end }}
{{- end }}
{{- join "," $res }}
{{- end }}

{{/* The admission webhook's Service. */}}
{{- define "konductor.webhookServiceName" -}}
{{- printf "%s-webhook" (include "konductor.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Secret of the webhook's serving certificate: the user's when provided, else the chart's
(or cert-manager's). */}}
{{- define "konductor.webhookSecretName" -}}
{{- $c := .Values.admissionWebhook.certificate }}
{{- if $c.provided }}
{{- required "admissionWebhook.certificate.secretName is required when admissionWebhook.certificate.provided" $c.secretName }}
{{- else }}
{{- printf "%s-webhook-cert" (include "konductor.fullname" .) }}
{{- end }}
{{- end }}

{{/* What both webhooks share: where they call, how they fail, what they never see. */}}
{{- define "konductor.webhookCommon" -}}
{{- $wh := .root.Values.admissionWebhook -}}
admissionReviewVersions: ["v1"]
clientConfig:
  service:
    name: {{ .service }}
    namespace: {{ .root.Release.Namespace }}
    path: /
  {{- with .caBundle }}
  caBundle: {{ . | b64enc }}
  {{- end }}
failurePolicy: {{ $wh.failurePolicy }}
matchPolicy: {{ $wh.matchPolicy | default "Equivalent" }}
sideEffects: None
timeoutSeconds: {{ $wh.timeoutSeconds }}
{{- with $wh.namespaceSelector }}
namespaceSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $selector := deepCopy ($wh.objectSelector | default dict) }}
{{- if and .secrets $wh.filterSecrets }}
{{- /* KIC's filterSecrets: only the Secrets labelled konghq.com/validate. */}}
{{- $_ := set $selector "matchExpressions" (append ($selector.matchExpressions | default list) (dict "key" "konghq.com/validate" "operator" "Exists")) }}
{{- end }}
{{- with $selector }}
objectSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $conditions := .matchConditions | default list }}
{{- $conditions = concat $conditions ($wh.matchConditions | default list) }}
{{- with $conditions }}
matchConditions:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
"true" when the PodDisruptionBudget lets at least one Pod be evicted with the replicas the
chart runs (autoscaling.minReplicas with autoscaling, else replicaCount): a budget that allows
none would block every node drain, so the chart makes none (NOTES.txt says so).
*/}}
{{- define "konductor.pdbSatisfiable" -}}
{{- $pdb := .Values.podDisruptionBudget }}
{{- $replicas := int .Values.replicaCount }}
{{- if .Values.autoscaling.enabled }}{{ $replicas = int .Values.autoscaling.minReplicas }}{{ end }}
{{- $ok := false }}
{{- if not (kindIs "invalid" $pdb.minAvailable) }}
{{- $min := $pdb.minAvailable }}
{{- $required := 0 }}
{{- if and (kindIs "string" $min) (hasSuffix "%" $min) }}
{{- $required = int (ceil (divf (mulf $replicas (float64 (trimSuffix "%" $min))) 100)) }}
{{- else }}
{{- $required = int $min }}
{{- end }}
{{- $ok = gt $replicas $required }}
{{- else }}
{{- $max := ternary 1 $pdb.maxUnavailable (kindIs "invalid" $pdb.maxUnavailable) }}
{{- if and (kindIs "string" $max) (hasSuffix "%" $max) }}
{{- $ok = and (gt $replicas 0) (gt (float64 (trimSuffix "%" $max)) 0.0) }}
{{- else }}
{{- $ok = and (gt $replicas 0) (gt (int $max) 0) }}
{{- end }}
{{- end }}
{{- $ok }}
{{- end }}

{{/*
Whether the controller discovers its gateways ("true") or is given URLs (""):
gatewayDiscovery.enabled when set, else discovery unless kongAdminURL is given.
*/}}
{{- define "konductor.discovery" -}}
{{- $gd := .Values.gatewayDiscovery -}}
{{- if hasKey $gd "enabled" -}}
{{- if $gd.enabled }}true{{ end -}}
{{- else if not .Values.kongAdminURL -}}
true
{{- end -}}
{{- end -}}
