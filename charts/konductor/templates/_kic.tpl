{{/*
KIC's values (docs/migration-from-kic.md, "The Helm chart takes KIC's values").

konductor.kic reads the values of Kong's charts as aliases of konductor's own keys: kong/kong's
ingressController.* and its deployment-level keys (replicaCount, podAnnotations, securityContext,
deployment.serviceAccount, autoscaling, ...), and kong/ingress's controller.ingressController.*
and controller.* (gateway.* configures Kong: ignored). It writes them over konductor's keys in
.Values, once per render; every template includes it first, and every template then reads
konductor's keys only. Later sources win: konductor's own keys, then kong/kong's, then
kong/ingress's.

In a values file with ingressController (a kong/kong values file), the top-level image
(repository, tag), env, customEnv, envFrom, resources, livenessProbe and readinessProbe are
Kong's container's, as in kong/kong: they are ignored and konductor's defaults stand, overlaid
with ingressController.image, .env, .customEnv, .envFrom, .resources and the probes. image.pullPolicy
and image.pullSecrets keep their kong/kong meaning (the Pod's, the controller's included).

Keys that configure Kong itself are accepted and listed in NOTES.txt as ignored
(.Values.__konductorKIC.ignored).
*/}}
{{- define "konductor.kic" -}}
{{- $v := .Values -}}
{{- if not (hasKey $v "__konductorKIC") -}}
{{- $ignored := list -}}
{{- $unsupported := list -}}
{{- $kicRelease := default .Release.Name $v.kicReleaseName -}}
{{- if hasKey $v "ingressController" -}}
  {{- /* kong/kong: the keys of Kong's own container are Kong's. */ -}}
  {{- $own := include "konductor.ownDefaults" . | fromYaml -}}
  {{- range $k := list "env" "customEnv" "envFrom" "resources" "livenessProbe" "readinessProbe" -}}
    {{- if ne (toJson (get $v $k)) (toJson (get $own $k)) }}{{ $ignored = append $ignored $k }}{{ end -}}
    {{- $_ := set $v $k (deepCopy (get $own $k)) -}}
  {{- end -}}
  {{- $img := $v.image -}}
  {{- range $k := list "repository" "tag" -}}
    {{- if ne (toJson (get $img $k)) (toJson (get $own.image $k)) }}{{ $ignored = append $ignored (printf "image.%s" $k) }}{{ end -}}
    {{- $_ := set $img $k (get $own.image $k) -}}
  {{- end -}}
  {{- range $k := list "unifiedRepoTag" "effectiveSemver" -}}
    {{- if hasKey $img $k }}{{ if get $img $k }}{{ $ignored = append $ignored (printf "image.%s" $k) }}{{ end }}{{ $_ := unset $img $k }}{{ end -}}
  {{- end -}}
  {{- $r := include "konductor.kicSource" (dict "v" $v "d" $v "c" (default dict $v.ingressController) "dPrefix" "" "cPrefix" "ingressController." "root" true "kicRelease" $kicRelease "ctx" .) | fromYaml -}}
  {{- $ignored = concat $ignored $r.ignored -}}
  {{- $unsupported = concat $unsupported $r.unsupported -}}
{{- end -}}
{{- if hasKey $v "controller" -}}
  {{- /* kong/ingress: its defaults where the file is silent (gateway discovery of the
         gateway release's admin Service, its proxy Service published). */ -}}
  {{- $d := default dict $v.controller -}}
  {{- if not (kindIs "map" (get $d "ingressController")) }}{{ $_ := set $d "ingressController" dict }}{{ end -}}
  {{- $c := $d.ingressController -}}
  {{- if not (kindIs "map" (get $c "gatewayDiscovery")) }}{{ $_ := set $c "gatewayDiscovery" dict }}{{ end -}}
  {{- $gd := $c.gatewayDiscovery -}}
  {{- if not (hasKey $gd "enabled") }}{{ $_ := set $gd "enabled" true }}{{ end -}}
  {{- if and (not (hasKey $gd "generateAdminApiService")) (not (dig "adminApiService" "name" "" $gd)) }}{{ $_ := set $gd "generateAdminApiService" true }}{{ end -}}
  {{- if not (kindIs "map" (get $d "proxy")) }}{{ $_ := set $d "proxy" dict }}{{ end -}}
  {{- if not (hasKey $d.proxy "nameOverride") }}{{ $_ := set $d.proxy "nameOverride" "{{ .Release.Name }}-gateway-proxy" }}{{ end -}}
  {{- range $k := list "image" "env" "customEnv" "envFrom" "resources" "livenessProbe" "readinessProbe" -}}
    {{- if hasKey $d $k -}}
      {{- if eq $k "image" -}}
        {{- range $ik, $iv := $d.image }}{{ if not (has $ik (list "pullPolicy" "pullSecrets")) }}{{ $ignored = append $ignored (printf "controller.image.%s" $ik) }}{{ end }}{{ end -}}
      {{- else -}}
        {{- $ignored = append $ignored (printf "controller.%s" $k) -}}
      {{- end -}}
    {{- end -}}
  {{- end -}}
  {{- $r := include "konductor.kicSource" (dict "v" $v "d" $d "c" $c "dPrefix" "controller." "cPrefix" "controller.ingressController." "root" false "kicRelease" $kicRelease "ctx" .) | fromYaml -}}
  {{- $ignored = concat $ignored $r.ignored -}}
  {{- $unsupported = concat $unsupported $r.unsupported -}}
{{- end -}}
{{- if hasKey $v "gateway" }}{{ $ignored = append $ignored "gateway" }}{{ end -}}
{{- $konnect := default dict $v.konnect -}}
{{- if and (dig "license" "enabled" false $konnect) (not $konnect.enabled) -}}
  {{- $unsupported = append $unsupported "konnect.license.enabled without konnect.enabled (as in KIC's charts, the license comes from Konnect with konnect.enabled only)" -}}
{{- end -}}
{{- if and (hasKey $v.rbac "enableClusterRoles") (not $v.rbac.enableClusterRoles) -}}
  {{- $unsupported = append $unsupported "rbac.enableClusterRoles=false (konductor reads cluster-scoped kinds: the ClusterRole is made)" -}}
{{- end -}}
{{- include "konductor.normalize" (dict "v" $v "kicRelease" $kicRelease) -}}
{{- $_ := set $v "__konductorKIC" (dict "ignored" $ignored "unsupported" $unsupported) -}}
{{- end -}}
{{- end -}}

{{/*
konductor's defaults of the keys whose top-level names are Kong's container's in kong/kong
(values.yaml holds the same; TestChartKICOwnDefaults keeps them equal).
*/}}
{{- define "konductor.ownDefaults" -}}
image:
  repository: konductor
  tag: ""
  pullPolicy: IfNotPresent
env:
  kong_admin_tls_skip_verify: true
customEnv: {}
envFrom: []
resources:
  requests:
    cpu: 100m
    memory: 128Mi
  limits:
    cpu: "1"
    memory: 512Mi
livenessProbe:
  httpGet:
    path: /healthz
    port: health
  initialDelaySeconds: 5
  periodSeconds: 10
  timeoutSeconds: 2
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: health
  initialDelaySeconds: 2
  periodSeconds: 5
  timeoutSeconds: 2
  failureThreshold: 3
{{- end -}}

{{/* Copies src's keys into dst (a map): present keys win, false and empty included. */}}
{{- define "konductor.setKeys" -}}
{{- range $k, $val := .src }}{{ $_ := set $.dst $k $val }}{{ end -}}
{{- end -}}

{{/* Ensures v[k] is a map and returns nothing; use (get v k) after. */}}
{{- define "konductor.ensureMap" -}}
{{- if not (kindIs "map" (get .v .k)) }}{{ $_ := set .v .k dict }}{{ end -}}
{{- end -}}

{{/*
One KIC source: d is the deployment-level map (kong/kong's top level, or kong/ingress's
controller), c its ingressController. Writes into v (konductor's values); returns YAML
{ignored: [...], unsupported: [...]}.
*/}}
{{- define "konductor.kicSource" -}}
{{- $v := .v -}}{{- $d := .d -}}{{- $c := .c -}}
{{- $ignored := list -}}{{- $unsupported := list -}}

{{- /* Deployment-level keys of the same name: kong/ingress's controller.* over konductor's. */ -}}
{{- if not .root -}}
  {{- range $k := list "replicaCount" "podAnnotations" "podLabels" "nodeSelector" "tolerations" "affinity" "topologySpreadConstraints" "priorityClassName" "terminationGracePeriodSeconds" "podDisruptionBudget" "serviceMonitor" "updateStrategy" "autoscaling" "deploymentAnnotations" "extraLabels" "dnsPolicy" "dnsConfig" "extraObjects" "nameOverride" "fullnameOverride" "securityContext" "containerSecurityContext" "deployment" -}}
    {{- if hasKey $d $k -}}
      {{- $val := get $d $k -}}
      {{- if and (kindIs "map" $val) (kindIs "map" (get $v $k)) -}}
        {{- include "konductor.setKeys" (dict "dst" (get $v $k) "src" $val) -}}
      {{- else -}}
        {{- $_ := set $v $k $val -}}
      {{- end -}}
    {{- end -}}
  {{- end -}}
  {{- with $d.image -}}
    {{- if hasKey . "pullPolicy" }}{{ $_ := set $v.image "pullPolicy" .pullPolicy }}{{ end -}}
    {{- with .pullSecrets }}{{ $_ := set $v "imagePullSecrets" (concat (default list $v.imagePullSecrets) .) }}{{ end -}}
  {{- end -}}
{{- end -}}

{{- /* Kong's own keys of a kong/kong values file (at the top level, or under controller.). */ -}}
{{- range $k := list "admin" "status" "clusterCaSecretName" "cluster" "udpProxy" "plugins" "secretVolumes" "migrations" "dblessConfig" "postgresql" "certificates" "waitImage" "enterprise" "manager" "portal" "portalapi" "clustertelemetry" "extraConfigMaps" "extraSecrets" "lifecycle" "startupProbe" "initContainerResources" "podSecurityPolicy" -}}
  {{- if hasKey $d $k }}{{ $ignored = append $ignored (printf "%s%s" $.dPrefix $k) }}{{ end -}}
{{- end -}}
{{- if hasKey $d "namespace" }}{{ $unsupported = append $unsupported (printf "%snamespace (objects are in the release namespace)" $.dPrefix) }}{{ end -}}
{{- with $d.proxy -}}
  {{- if .nameOverride -}}
    {{- $ctx := dict "Values" $.ctx.Values "Chart" $.ctx.Chart "Capabilities" $.ctx.Capabilities "Template" $.ctx.Template "Release" (dict "Name" $.kicRelease "Namespace" $.ctx.Release.Namespace "Service" $.ctx.Release.Service) -}}
    {{- $_ := set $v "publishService" (tpl .nameOverride $ctx) -}}
  {{- end -}}
  {{- if omit . "nameOverride" }}{{ $ignored = append $ignored (printf "%sproxy (all but proxy.nameOverride)" $.dPrefix) }}{{ end -}}
{{- end -}}
{{- with $d.deployment -}}
  {{- range $k := list "kong" "prefixDir" "tmpDir" "test" -}}
    {{- if hasKey $.d.deployment $k }}{{ $ignored = append $ignored (printf "%sdeployment.%s" $.dPrefix $k) }}{{ end -}}
  {{- end -}}
  {{- if .daemonset }}{{ $unsupported = append $unsupported (printf "%sdeployment.daemonset (konductor runs as a Deployment)" $.dPrefix) }}{{ end -}}
{{- end -}}

{{- /* The controller's keys. */ -}}
{{- if and (hasKey $c "enabled") (not $c.enabled) }}{{ $unsupported = append $unsupported (printf "%senabled=false (this chart is the controller)" $.cPrefix) }}{{ end -}}
{{- with $c.image -}}
  {{- range $k := list "repository" "tag" "pullPolicy" "unifiedRepoTag" -}}
    {{- if hasKey $.c.image $k }}{{ $_ := set $v.image $k (get $.c.image $k) }}{{ end -}}
  {{- end -}}
{{- end -}}
{{- range $k := list "args" "envFrom" "watchNamespaces" "ingressClass" "ingressClassAnnotations" "livenessProbe" "readinessProbe" "resources" -}}
  {{- if hasKey $c $k }}{{ $_ := set $v $k (get $c $k) }}{{ end -}}
{{- end -}}
{{- if hasKey $c "disableProbes" }}{{ $_ := set $v "livenessProbe" dict }}{{ $_ := set $v "readinessProbe" dict }}{{ end -}}
{{- range $k := list "env" "customEnv" -}}
  {{- if kindIs "map" (get $c $k) -}}
    {{- include "konductor.ensureMap" (dict "v" $v "k" $k) -}}
    {{- include "konductor.setKeys" (dict "dst" (get $v $k) "src" (get $c $k)) -}}
  {{- end -}}
{{- end -}}
{{- if hasKey $c "createIngressClass" }}{{ $_ := set $v.ingressClassResource "enabled" $c.createIngressClass }}{{ end -}}
{{- with $c.gatewayDiscovery -}}
  {{- $gd := . -}}
  {{- if and (hasKey $gd "enabled") (not $gd.enabled) -}}
    {{- /* In KIC's charts false is the sidecar (the Admin API on localhost), which a
           controller in a Pod of its own cannot reach: konductor's rule stands (discovery
           unless kongAdminURL is given). */ -}}
    {{- $ignored = append $ignored (printf "%sgatewayDiscovery.enabled=false (the sidecar's localhost Admin API; konductor discovers the admin Service unless kongAdminURL is set)" $.cPrefix) -}}
    {{- $gd = omit $gd "enabled" -}}
  {{- end -}}
  {{- include "konductor.setKeys" (dict "dst" $v.gatewayDiscovery "src" $gd) -}}
{{- end -}}
{{- with $c.admissionWebhook -}}
  {{- range $k, $val := . -}}
    {{- if and (kindIs "map" $val) (has $k (list "certificate" "service" "certManager")) -}}
      {{- include "konductor.ensureMap" (dict "v" $v.admissionWebhook "k" $k) -}}
      {{- include "konductor.setKeys" (dict "dst" (get $v.admissionWebhook $k) "src" $val) -}}
    {{- else -}}
      {{- $_ := set $v.admissionWebhook $k $val -}}
    {{- end -}}
  {{- end -}}
{{- end -}}
{{- with $c.rbac -}}
  {{- include "konductor.setKeys" (dict "dst" $v.rbac "src" .) -}}
{{- end -}}
{{- with $c.userDefinedVolumeMounts -}}
  {{- $_ := set $v "extraVolumeMounts" (concat (default list $v.extraVolumeMounts) .) -}}
{{- end -}}
{{- if kindIs "map" $c.konnect -}}
  {{- /* konductor's konnect.* has KIC's keys (konductor.controllerSettings derives the
         CONTROLLER_KONNECT_* variables as KIC's charts do). */ -}}
  {{- include "konductor.ensureMap" (dict "v" $v "k" "konnect") -}}
  {{- range $k, $val := $c.konnect -}}
    {{- if eq $k "license" -}}
      {{- if kindIs "map" $val -}}
        {{- include "konductor.ensureMap" (dict "v" $v.konnect "k" "license") -}}
        {{- include "konductor.setKeys" (dict "dst" $v.konnect.license "src" $val) -}}
      {{- end -}}
    {{- else -}}
      {{- $_ := set $v.konnect $k $val -}}
    {{- end -}}
  {{- end -}}
{{- end -}}
{{- $client := dig "adminApi" "tls" "client" dict $c -}}
{{- if $client.enabled -}}
  {{- if not (and $client.certProvided $client.secretName) -}}
    {{- fail (printf "%sadminApi.tls.client.enabled: konductor does not install Kong, so it cannot make the client certificate Kong must trust: set certProvided: true and secretName (a kubernetes.io/tls Secret whose CA Kong's admin.tls.client trusts)" $.cPrefix) -}}
  {{- end -}}
  {{- $_ := set $v "extraVolumes" (append (default list $v.extraVolumes) (dict "name" "admin-api-cert" "secret" (dict "secretName" $client.secretName))) -}}
  {{- $_ := set $v "extraVolumeMounts" (append (default list $v.extraVolumeMounts) (dict "name" "admin-api-cert" "mountPath" "/etc/secrets/admin-api-cert" "readOnly" true)) -}}
  {{- $_ := set $v.env "kong_admin_tls_client_cert_file" "/etc/secrets/admin-api-cert/tls.crt" -}}
  {{- $_ := set $v.env "kong_admin_tls_client_key_file" "/etc/secrets/admin-api-cert/tls.key" -}}
{{- end -}}
{{- toYaml (dict "ignored" $ignored "unsupported" $unsupported) -}}
{{- end -}}

{{/*
KIC's forms of konductor's own keys, read the same wherever they were written: securityContext
(kong/kong's Pod security context) over podSecurityContext; containerSecurityContext.enabled;
deployment.serviceAccount and deployment.userDefinedVolumes; imagePullSecrets as names;
gatewayDiscovery.generateAdminApiService and .adminApiService.
*/}}
{{- define "konductor.normalize" -}}
{{- $v := .v -}}
{{- with $v.securityContext -}}
  {{- include "konductor.ensureMap" (dict "v" $v "k" "podSecurityContext") -}}
  {{- include "konductor.setKeys" (dict "dst" $v.podSecurityContext "src" .) -}}
{{- end -}}
{{- if kindIs "map" $v.containerSecurityContext -}}
  {{- if and (hasKey $v.containerSecurityContext "enabled") (not $v.containerSecurityContext.enabled) -}}
    {{- $_ := set $v "containerSecurityContext" dict -}}
  {{- else -}}
    {{- $_ := set $v "containerSecurityContext" (omit $v.containerSecurityContext "enabled") -}}
  {{- end -}}
{{- end -}}
{{- $dep := default dict $v.deployment -}}
{{- with $dep.serviceAccount -}}
  {{- include "konductor.setKeys" (dict "dst" $v.serviceAccount "src" (pick . "create" "name" "annotations")) -}}
{{- end -}}
{{- with $dep.userDefinedVolumes -}}
  {{- $_ := set $v "extraVolumes" (concat . (default list $v.extraVolumes)) -}}
{{- end -}}
{{- $secrets := list -}}
{{- if kindIs "map" $v.image -}}
  {{- with $v.image.pullSecrets }}{{ $_ := set $v "imagePullSecrets" (concat (default list $v.imagePullSecrets) .) }}{{ end -}}
  {{- $_ := unset $v.image "pullSecrets" -}}
{{- end -}}
{{- range $v.imagePullSecrets -}}
  {{- if kindIs "string" . }}{{ $secrets = append $secrets (dict "name" .) }}{{ else }}{{ $secrets = append $secrets . }}{{ end -}}
{{- end -}}
{{- $_ := set $v "imagePullSecrets" $secrets -}}
{{- $gd := $v.gatewayDiscovery -}}
{{- $apiSvc := default dict $gd.adminApiService -}}
{{- if and $gd.generateAdminApiService $apiSvc.name -}}
  {{- fail "gatewayDiscovery.adminApiService and gatewayDiscovery.generateAdminApiService must not be provided at the same time (as in KIC's chart)" -}}
{{- end -}}
{{- if $gd.generateAdminApiService -}}
  {{- $_ := set $gd.adminService "name" (printf "%s-gateway-admin" .kicRelease) -}}
{{- else if $apiSvc.name -}}
  {{- $_ := set $gd.adminService "name" $apiSvc.name -}}
{{- end -}}
{{- with $apiSvc.namespace }}{{ $_ := set $gd.adminService "namespace" . }}{{ end -}}
{{- end -}}
