{{/*
Names, labels and the addresses every template agrees on.
*/}}

{{- define "sleuth.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sleuth.fullname" -}}
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

{{- define "sleuth.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object; pass (dict "ctx" $ "component" "gateway") for a service's objects. */}}
{{- define "sleuth.labels" -}}
helm.sh/chart: {{ include "sleuth.chart" .ctx }}
{{ include "sleuth.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: sleuth
{{- end }}

{{- define "sleuth.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sleuth.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end }}

{{/* The object name of one service: <fullname>-<service>. */}}
{{- define "sleuth.componentName" -}}
{{- printf "%s-%s" (include "sleuth.fullname" .ctx) .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sleuth.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end }}

{{- define "sleuth.identitySecret" -}}
{{- .Values.identity.existingSecret | default (printf "%s-identity" (include "sleuth.fullname" .)) -}}
{{- end }}

{{/*
The subcharts' object names, computed the way the NATS and Valkey charts compute them
(fullnameOverride, else "<release>-<chart name>" unless the release name contains it; Valkey is
aliased "redis", which Helm makes its chart name).
*/}}
{{- define "sleuth.subchartFullname" -}}
{{- $v := .values | default dict -}}
{{- if $v.fullnameOverride -}}
{{- $v.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := $v.nameOverride | default .chart -}}
{{- if contains $name .ctx.Release.Name -}}
{{- .ctx.Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .ctx.Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end }}

{{- define "sleuth.natsName" -}}
{{- include "sleuth.subchartFullname" (dict "ctx" . "values" .Values.nats "chart" "nats") -}}
{{- end }}

{{- define "sleuth.natsService" -}}
{{- dig "service" "name" "" .Values.nats | default (include "sleuth.natsName" .) -}}
{{- end }}

{{- define "sleuth.natsHeadlessService" -}}
{{- dig "headlessService" "name" "" .Values.nats | default (printf "%s-headless" (include "sleuth.natsName" .)) -}}
{{- end }}

{{- define "sleuth.redisName" -}}
{{- include "sleuth.subchartFullname" (dict "ctx" . "values" .Values.redis "chart" "redis") -}}
{{- end }}

{{- define "sleuth.natsUrl" -}}
{{- if .Values.nats.enabled -}}
{{- printf "nats://%s:%v" (include "sleuth.natsService" .) (dig "config" "nats" "port" 4222 .Values.nats) -}}
{{- else if .Values.externalNats.url -}}
{{- .Values.externalNats.url -}}
{{- else -}}
{{- fail "nats.enabled is false: set externalNats.url (nats://host:4222)" -}}
{{- end -}}
{{- end }}

{{- define "sleuth.redisUrl" -}}
{{- if .Values.redis.enabled -}}
{{- printf "redis://%s:%v/0" (include "sleuth.redisName" .) (dig "service" "port" 6379 .Values.redis) -}}
{{- else if .Values.externalRedis.url -}}
{{- .Values.externalRedis.url -}}
{{- else -}}
{{- fail "redis.enabled is false: set externalRedis.url (redis://host:6379/0)" -}}
{{- end -}}
{{- end }}

{{/* NATS monitoring host:port for KEDA: the headless Service resolves every NATS pod, which KEDA
needs to find a clustered consumer's leader (<pod>.<headless service>). */}}
{{- define "sleuth.natsMonitoringEndpoint" -}}
{{- if .Values.nats.enabled -}}
{{- printf "%s.%s.svc.cluster.local:%v" (include "sleuth.natsHeadlessService" .) .Release.Namespace (dig "config" "monitor" "port" 8222 .Values.nats) -}}
{{- else if .Values.externalNats.monitoringEndpoint -}}
{{- .Values.externalNats.monitoringEndpoint -}}
{{- else -}}
{{- fail "agent.autoscaling.keda.enabled with nats.enabled=false: set externalNats.monitoringEndpoint (host:8222, NATS monitoring)" -}}
{{- end -}}
{{- end }}

{{/* Where authz-cache and kube-mcp find their projected service-account token and the cluster CA. */}}
{{- define "sleuth.kubeApiDir" -}}/var/run/secrets/sleuth/kube{{- end }}

{{/* Where the gateway finds the Mattermost bot's token (chat.existingSecret) and the server's CA. */}}
{{- define "sleuth.chatSecretDir" -}}/etc/sleuth/chat{{- end }}
{{- define "sleuth.mattermostTokenFile" -}}{{ include "sleuth.chatSecretDir" . }}/mattermost-token{{- end }}
{{- define "sleuth.mattermostCaDir" -}}/etc/sleuth/mattermost-ca{{- end }}
{{- define "sleuth.mattermostCaFile" -}}{{ include "sleuth.mattermostCaDir" . }}/ca.crt{{- end }}

{{/* Where the reporter finds the SMTP password (smtp.existingSecret). */}}
{{- define "sleuth.smtpSecretDir" -}}/etc/sleuth/smtp{{- end }}
{{- define "sleuth.smtpPasswordFile" -}}{{ include "sleuth.smtpSecretDir" . }}/password{{- end }}

{{/* An environment variable name from a free name: upper case, [A-Z0-9_] only. */}}
{{- define "sleuth.envName" -}}
{{- regexReplaceAll "[^A-Z0-9_]" (upper .) "_" -}}
{{- end }}

{{- define "sleuth.routeTokenEnv" -}}
{{- .tokenEnv | default (printf "SLEUTH_ALERTS_TOKEN_%s" (include "sleuth.envName" .name)) -}}
{{- end }}

{{- define "sleuth.clusterTokenEnv" -}}
{{- printf "SLEUTH_AUTHZ_TOKEN_%s" (include "sleuth.envName" .name) -}}
{{- end }}

{{/* The services this release runs, as a JSON list (the scheduler and the reporter when enabled). */}}
{{- define "sleuth.components" -}}
{{- $out := list "gateway" "authz-cache" "agent" "alerts" "kube-mcp" -}}
{{- if .Values.scheduler.enabled }}{{ $out = append $out "scheduler" }}{{ end -}}
{{- if .Values.reporter.enabled }}{{ $out = append $out "reporter" }}{{ end -}}
{{- toJson $out -}}
{{- end }}

{{/* The services that use the bus and Redis (kube-mcp uses neither), as a JSON list. */}}
{{- define "sleuth.busComponents" -}}
{{- without (include "sleuth.components" . | fromJsonArray) "kube-mcp" | toJson -}}
{{- end }}

{{/* Whether the agent's replica count is left to an autoscaler. */}}
{{- define "sleuth.agentAutoscaled" -}}
{{- if or .Values.agent.autoscaling.keda.enabled .Values.agent.autoscaling.hpa.enabled }}true{{ end -}}
{{- end }}

{{/*
Deep-merge .src into .dst in place: maps merge, anything else (lists, scalars) replaces, null
removes the key. Unlike mergeOverwrite it lets `false`, 0 and "" override.
*/}}
{{- define "sleuth.deepMerge" -}}
{{- $dst := .dst -}}
{{- range $k, $v := .src -}}
{{- if kindIs "invalid" $v -}}
{{- $_ := unset $dst $k -}}
{{- else if and (kindIs "map" $v) (kindIs "map" (get $dst $k)) -}}
{{- include "sleuth.deepMerge" (dict "dst" (get $dst $k) "src" $v) -}}
{{- else -}}
{{- $_ := set $dst $k $v -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/*
Refuse secrets in the config: a key named like a credential (password, token, api_key, secret,
private_key, credentials ...) holding a non-empty string. Names ending in _env or _file are
references and pass.
*/}}
{{- define "sleuth.noSecrets" -}}
{{- $path := .path -}}
{{- if kindIs "map" .value -}}
{{- range $k, $v := .value -}}
{{- $here := printf "%s.%s" $path $k -}}
{{- if and (regexMatch "(?i)(^|_)(password|passwd|secret|api_?key|token|credentials|private_?key)$" $k) (kindIs "string" $v) (ne $v "") -}}
{{- fail (printf "%s looks like a secret: secrets never go in the ConfigMap. Put it in a Secret and name it (llm.existingSecret, alerts.existingSecret, auth.existingSecret, identity.existingSecret) or use the setting's *_env / *_file form." $here) -}}
{{- end -}}
{{- include "sleuth.noSecrets" (dict "path" $here "value" $v) -}}
{{- end -}}
{{- else if kindIs "slice" .value -}}
{{- range $i, $v := .value -}}
{{- include "sleuth.noSecrets" (dict "path" (printf "%s[%d]" $path $i) "value" $v) -}}
{{- end -}}
{{- end -}}
{{- end }}
