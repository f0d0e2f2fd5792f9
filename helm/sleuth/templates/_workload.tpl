{{/*
One service's Deployment. Arguments (dict):
  ctx        the root context
  component  gateway | authz-cache | agent | alerts | kube-mcp | scheduler | reporter (also the
             NATS/Redis user name)
  values     the service's values (replicas, resources)
  port       the port of /healthz, /readyz and /metrics; portName its name
  signer     agent | authz | alerts | chat | scheduler | reporter: the one private key this pod
             gets ("" = public keys only)
  trusts     more public keys it gets beside the four every pod has (the agent: scheduler.pub,
             reporter.pub of the job issuers that run)
  kubeApi    mount the projected service-account token and cluster CA (authz-cache, kube-mcp)
  bus        log in to NATS/Redis as its own user when auth.existingSecret is set
  env        more env entries (YAML list text), literal values or secretKeyRef only
  volumes / volumeMounts  more of each (YAML list text)
  annotations  more pod annotations (dict), e.g. a checksum of a file it mounts
  replicas   false to leave the count to an autoscaler

The container is what `docker run IMAGE sleuth-<service> --config /etc/sleuth/sleuth.yaml` runs:
the image's entrypoint with the service command as args, the config file from the ConfigMap,
secrets as env (secretKeyRef) or files (secret volume).
*/}}
{{- define "sleuth.deployment" -}}
{{- $ctx := .ctx -}}
{{- $v := .values -}}
{{- $name := include "sleuth.componentName" (dict "ctx" $ctx "component" .component) -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  namespace: {{ $ctx.Release.Namespace }}
  labels:
    {{- include "sleuth.labels" (dict "ctx" $ctx "component" .component) | nindent 4 }}
spec:
  {{- if ne (toString .replicas) "false" }}
  replicas: {{ $v.replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "sleuth.selectorLabels" (dict "ctx" $ctx "component" .component) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "sleuth.selectorLabels" (dict "ctx" $ctx "component" .component) | nindent 8 }}
        {{- with $ctx.Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        checksum/config: {{ include "sleuth.configYaml" $ctx | sha256sum }}
        {{- with .annotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with $ctx.Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ $name }}
      # No automounted token: only authz-cache and kube-mcp get one, as an explicit projected volume.
      automountServiceAccountToken: false
      enableServiceLinks: false
      {{- with $ctx.Values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- with $ctx.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- range . }}
        - name: {{ . }}
        {{- end }}
      {{- end }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 10001
        runAsGroup: 10001
        fsGroup: 10001
        seccompProfile:
          type: RuntimeDefault
      terminationGracePeriodSeconds: 30
      containers:
        - name: {{ .component }}
          image: {{ include "sleuth.image" $ctx | quote }}
          imagePullPolicy: {{ $ctx.Values.image.pullPolicy }}
          args: [{{ printf "sleuth-%s" .component | quote }}, "--config", "/etc/sleuth/sleuth.yaml"]
          ports:
            - name: {{ .portName }}
              containerPort: {{ .port }}
              protocol: TCP
          {{- with include "sleuth.podEnv" . | trim }}
          env:
            {{- . | nindent 12 }}
          {{- end }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            runAsNonRoot: true
            runAsUser: 10001
            runAsGroup: 10001
            readOnlyRootFilesystem: true
            allowPrivilegeEscalation: false
            capabilities:
              drop: [ALL]
            seccompProfile:
              type: RuntimeDefault
          startupProbe:
            httpGet: {path: /healthz, port: {{ .portName }}}
            periodSeconds: 2
            timeoutSeconds: 2
            failureThreshold: 30
          livenessProbe:
            httpGet: {path: /healthz, port: {{ .portName }}}
            periodSeconds: 10
            timeoutSeconds: 3
            failureThreshold: 3
          readinessProbe:
            httpGet: {path: /readyz, port: {{ .portName }}}
            periodSeconds: 5
            timeoutSeconds: 3
            failureThreshold: 2
          volumeMounts:
            - name: config
              mountPath: /etc/sleuth/sleuth.yaml
              subPath: sleuth.yaml
              readOnly: true
            - name: identity
              mountPath: /etc/sleuth/identity
              readOnly: true
            {{- if .kubeApi }}
            - name: kube-api
              mountPath: {{ include "sleuth.kubeApiDir" $ctx }}
              readOnly: true
            {{- end }}
            - name: tmp
              mountPath: /tmp
            {{- with .volumeMounts }}
            {{- . | nindent 12 }}
            {{- end }}
      volumes:
        - name: config
          configMap:
            name: {{ include "sleuth.fullname" $ctx }}-config
        - name: identity
          secret:
            secretName: {{ include "sleuth.identitySecret" $ctx }}
            defaultMode: 288  # 0440: owner and the pod's fsGroup
            # The public keys, and this service's own private key only.
            items:
              - {key: agent.pub, path: agent.pub}
              - {key: authz.pub, path: authz.pub}
              - {key: alerts.pub, path: alerts.pub}
              - {key: chat.pub, path: chat.pub}
              {{- range .trusts }}
              - {key: {{ . }}, path: {{ . }}}
              {{- end }}
              {{- if .signer }}
              - {key: {{ printf "%s.key" .signer }}, path: {{ printf "%s.key" .signer }}}
              {{- end }}
        {{- if .kubeApi }}
        # Its service-account token (rotated by the kubelet, re-read by the service) and the
        # cluster CA, where the config points (kube_mcp.service_account_dir, clusters[0]).
        - name: kube-api
          projected:
            defaultMode: 288  # 0440
            sources:
              - serviceAccountToken:
                  path: token
                  expirationSeconds: 3600
              - configMap:
                  name: kube-root-ca.crt
                  items:
                    - {key: ca.crt, path: ca.crt}
        {{- end }}
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
        {{- with .volumes }}
        {{- . | nindent 8 }}
        {{- end }}
      {{- with $ctx.Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $ctx.Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $ctx.Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if $ctx.Values.spreadAcrossNodes }}
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "sleuth.selectorLabels" (dict "ctx" $ctx "component" .component) | nindent 14 }}
      {{- end }}
{{- end }}

{{/* The env of one service's container (see sleuth.deployment): literal values and secretKeyRefs. */}}
{{- define "sleuth.podEnv" -}}
{{- $auth := .ctx.Values.auth -}}
{{- if .signer }}
# Its own signing key, nobody else's.
- name: SLEUTH_IDENTITY__SIGNING_KEY_FILE
  value: {{ printf "/etc/sleuth/identity/%s.key" .signer | quote }}
{{- end }}
{{- if and .bus $auth.existingSecret $auth.nats }}
- name: SLEUTH_NATS__USER
  value: {{ .component | quote }}
- name: SLEUTH_NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $auth.existingSecret }}
      key: {{ printf "nats-%s" .component }}
{{- end }}
{{- if and .bus $auth.existingSecret $auth.redis }}
- name: SLEUTH_REDIS__USERNAME
  value: {{ .component | quote }}
- name: SLEUTH_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $auth.existingSecret }}
      key: {{ printf "redis-%s" .component }}
{{- end }}
{{- with .ctx.Values.tracing }}
{{- if .endpoint }}
# Traces to an OTLP/HTTP collector (sleuth_common.tracing reads the standard variables).
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .endpoint | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ .sampler | quote }}
{{- if .samplerArg }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ .samplerArg | quote }}
{{- end }}
{{- if .headersSecret }}
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ .headersSecret }}
      key: {{ .headersKey }}
{{- end }}
{{- end }}
{{- end }}
{{- with .env }}
{{ . }}
{{- end }}
{{- end }}

{{/* One service's ServiceAccount: no automounted token, ever. */}}
{{- define "sleuth.serviceAccount" -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "sleuth.componentName" . }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "sleuth.labels" . | nindent 4 }}
  {{- with .ctx.Values.serviceAccountAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
automountServiceAccountToken: false
{{- end }}

{{/* A ClusterIP Service; args: ctx, component, name, port (service port), targetPort (name), type, annotations. */}}
{{- define "sleuth.service" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ .name | default (include "sleuth.componentName" .) }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "sleuth.labels" . | nindent 4 }}
  {{- with .annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ .type | default "ClusterIP" }}
  selector:
    {{- include "sleuth.selectorLabels" . | nindent 4 }}
  ports:
    - name: {{ .targetPort }}
      port: {{ .port }}
      targetPort: {{ .targetPort }}
      protocol: TCP
      appProtocol: http
{{- end }}

{{/* A PodDisruptionBudget when the service runs more than one pod; args: ctx, component, many. */}}
{{- define "sleuth.pdb" -}}
{{- if and .ctx.Values.podDisruptionBudget.enabled .many }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "sleuth.componentName" . }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "sleuth.labels" . | nindent 4 }}
spec:
  maxUnavailable: 1
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels:
      {{- include "sleuth.selectorLabels" . | nindent 6 }}
{{- end }}
{{- end }}
