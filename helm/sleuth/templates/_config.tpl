{{/*
The services' config file (sleuth.yaml), the same shape `sleuth up` writes
(src/sleuth/embedded/stack.py _write_config): one file for every service, each reads its
sections. Listeners on 0.0.0.0; the identity keys, tokens and passwords are files and
environment variables named here, never values.
*/}}
{{- define "sleuth.config" -}}
{{- $fullname := include "sleuth.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $kube := include "sleuth.kubeApiDir" . -}}
{{- $id := "/etc/sleuth/identity" -}}
{{- $gatewaySvc := include "sleuth.componentName" (dict "ctx" . "component" "gateway") -}}
{{- $alertsSvc := include "sleuth.componentName" (dict "ctx" . "component" "alerts") -}}
{{- $publicUrl := .Values.gateway.publicUrl -}}
{{- if and (not $publicUrl) .Values.gateway.ingress.enabled .Values.gateway.ingress.host -}}
{{- $publicUrl = printf "%s://%s" (ternary "https" "http" (ne .Values.gateway.ingress.tls.secretName "")) .Values.gateway.ingress.host -}}
{{- end -}}
prefix: {{ .Values.prefix | quote }}
nats:
  url: {{ include "sleuth.natsUrl" . | quote }}
redis:
  url: {{ include "sleuth.redisUrl" . | quote }}
jetstream:
  replicas: {{ .Values.jetstream.replicas }}
  {{- /* int64: Helm reads numbers as floats and would print 1073741824 as 1.073741824e+09 */}}
  results_max_age: {{ .Values.jetstream.resultsMaxAge | int64 }}
  results_max_bytes: {{ .Values.jetstream.resultsMaxBytes | int64 }}
audit:
  max_age: {{ .Values.audit.maxAge | int64 }}
  max_bytes: {{ .Values.audit.maxBytes | int64 }}
  publish_timeout: {{ .Values.audit.publishTimeout }}
  backlog: {{ .Values.audit.backlog | int64 }}
logging:
  level: {{ .Values.logging.level | quote }}
  json_format: {{ .Values.logging.json }}
clusters:
  - name: {{ .Values.cluster.name | quote }}
    aliases: {{ .Values.cluster.aliases | toJson }}
    api_server: https://kubernetes.default.svc:443
    ca_file: {{ $kube }}/ca.crt
    authz_token_file: {{ $kube }}/token
    mcp_servers:
      # Sleuth's kube-mcp reads as the asker: the agent signs who that is.
      - name: kube
        url: {{ printf "http://%s:8181/mcp" (include "sleuth.componentName" (dict "ctx" . "component" "kube-mcp")) | quote }}
        identity: true
  {{- range .Values.extraClusters }}
  - name: {{ .name | quote }}
    aliases: {{ .aliases | default list | toJson }}
    api_server: {{ .apiServer | quote }}
    {{- if .caBundle }}
    ca_file: {{ printf "/etc/sleuth/clusters/%s.crt" .name | quote }}
    {{- end }}
    {{- if .authzTokenSecret }}
    authz_token_env: {{ include "sleuth.clusterTokenEnv" . | quote }}
    {{- end }}
    mcp_servers: {{ .mcpServers | default list | toJson }}
  {{- end }}
identity:
  verify_key_files: [{{ $id }}/agent.pub]
  job_issuers:
    sleuth-authz: [{{ $id }}/authz.pub]
    sleuth-alerts: [{{ $id }}/alerts.pub]
    sleuth-chat: [{{ $id }}/chat.pub]
    {{- if .Values.scheduler.enabled }}
    sleuth-scheduler: [{{ $id }}/scheduler.pub]
    {{- end }}
    {{- if .Values.reporter.enabled }}
    sleuth-reporter: [{{ $id }}/reporter.pub]
    {{- end }}
gateway:
  host: 0.0.0.0
  port: 8080
  {{- with $publicUrl }}
  public_url: {{ . | quote }}
  {{- end }}
  allowed_hosts:
    {{- range list $gatewaySvc (printf "%s.%s" $gatewaySvc $ns) (printf "%s.%s.svc" $gatewaySvc $ns) (printf "%s.%s.svc.cluster.local" $gatewaySvc $ns) }}
    - {{ . | quote }}
    {{- end }}
    {{- range .Values.gateway.allowedHosts }}
    - {{ . | quote }}
    {{- end }}
  trusted_proxies: {{ .Values.gateway.trustedProxies | toJson }}
  max_queue_depth: {{ .Values.gateway.maxQueueDepth }}
  max_queue_wait: {{ .Values.gateway.maxQueueWait }}
  # Sleuth's own service accounts may not use chat or the API.
  refused_identities:
    {{- range include "sleuth.components" . | fromJsonArray }}
    - {{ printf "system:serviceaccount:%s:%s-%s" $ns $fullname . | quote }}
    {{- end }}
  # The chat commands of the scheduler and the reporter, on when they run.
  schedules: {{ .Values.scheduler.enabled }}
  reports: {{ .Values.reporter.enabled }}
  {{- with .Values.gateway.mattermost }}
  {{- if .url }}
  # The Mattermost bot: its token is a file from chat.existingSecret, in the gateway pod only.
  mattermost:
    url: {{ .url | quote }}
    token_file: {{ include "sleuth.mattermostTokenFile" $ | quote }}
    {{- if .caBundle }}
    ca_file: {{ include "sleuth.mattermostCaFile" $ | quote }}
    {{- end }}
    people:{{ if not .people }} []{{ end }}
      {{- range .people }}
      - email: {{ .email | quote }}
        user: {{ .user | quote }}
        groups: {{ .groups | default list | toJson }}
      {{- end }}
    {{- if .peopleUrl }}
    people_url: {{ .peopleUrl | quote }}
    {{- if $.Values.chat.peopleTokenKey }}
    people_token_env: SLEUTH_MATTERMOST_PEOPLE_TOKEN
    {{- end }}
    {{- end }}
    ignored_members: {{ .ignoredMembers | toJson }}
  {{- end }}
  {{- end }}
authz_cache:
  host: 0.0.0.0
  metrics_port: 9101
agent:
  host: 0.0.0.0
  metrics_port: 9102
  {{- if or .Values.llm.existingSecret .Values.llm.baseUrl }}
  llm:
    provider: {{ .Values.llm.provider | quote }}
    base_url: {{ .Values.llm.baseUrl | quote }}
    model: {{ .Values.llm.model | quote }}
    api_key_env: SLEUTH_LLM_API_KEY
  {{- end }}
{{- with .Values.agent.runbooks.configMap }}
knowledge:
  runbooks_dir: /etc/sleuth/runbooks
{{- end }}
alerts:
  host: 0.0.0.0
  port: 8090
  allowed_hosts:
    {{- range list $alertsSvc (printf "%s.%s" $alertsSvc $ns) (printf "%s.%s.svc" $alertsSvc $ns) (printf "%s.%s.svc.cluster.local" $alertsSvc $ns) }}
    - {{ . | quote }}
    {{- end }}
    {{- if and .Values.alerts.ingress.enabled .Values.alerts.ingress.host }}
    - {{ .Values.alerts.ingress.host | quote }}
    {{- end }}
    {{- range .Values.alerts.allowedHosts }}
    - {{ . | quote }}
    {{- end }}
  routes:{{ if not .Values.alerts.routes }} []{{ end }}
    {{- range .Values.alerts.routes }}
    - name: {{ .name | quote }}
      channel: {{ .channel | quote }}
      token_env: {{ include "sleuth.routeTokenEnv" . | quote }}
      {{- with .runAs }}
      run_as:
        user: {{ .user | quote }}
        groups: {{ .groups | default list | toJson }}
      {{- end }}
    {{- end }}
kube_mcp:
  host: 0.0.0.0
  port: 8181
  kubeconfig: ""
  service_account_dir: {{ $kube }}
  cluster_name: {{ .Values.cluster.name | quote }}
  accept_caller_token: {{ .Values.kubeMcp.readWithCallerToken }}
  require_identity: true
{{- if .Values.scheduler.enabled }}
scheduler:
  host: 0.0.0.0
  port: 8091
{{- end }}
{{- with .Values.reporter }}
{{- if .enabled }}
reporter:
  host: 0.0.0.0
  port: 9104
  emails: {{ .emails | toJson }}
  {{- if .smtp.host }}
  # The mail server; the password of `user` is a file from smtp.existingSecret, in the reporter pod only.
  smtp:
    host: {{ .smtp.host | quote }}
    port: {{ .smtp.port }}
    starttls: {{ .smtp.starttls }}
    tls: {{ .smtp.tls }}
    sender: {{ .smtp.from | quote }}
    {{- if .smtp.user }}
    user: {{ .smtp.user | quote }}
    password_file: {{ include "sleuth.smtpPasswordFile" $ | quote }}
    {{- end }}
  {{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* The rendered config with values.config merged over it, checked for secrets, as YAML. */}}
{{- define "sleuth.configYaml" -}}
{{- $cfg := include "sleuth.config" . | fromYaml -}}
{{- if hasKey $cfg "Error" -}}
{{- fail (printf "internal: the rendered config is not YAML: %s" $cfg.Error) -}}
{{- end -}}
{{- include "sleuth.deepMerge" (dict "dst" $cfg "src" (.Values.config | default dict)) -}}
{{- if and (dig "gateway" "mattermost" "url" "" $cfg) (not .Values.gateway.mattermost.url) -}}
{{- fail "config.gateway.mattermost.url: set gateway.mattermost.url instead, so the gateway gets the bot's token from chat.existingSecret" -}}
{{- end -}}
{{- if and (dig "reporter" "smtp" "host" "" $cfg) (not .Values.reporter.smtp.host) -}}
{{- fail "config.reporter.smtp.host: set reporter.smtp.host (and .from, .user) instead, so the reporter gets the password from smtp.existingSecret" -}}
{{- end -}}
{{- include "sleuth.noSecrets" (dict "path" "config" "value" $cfg) -}}
{{- toYaml $cfg -}}
{{- end }}
