{{/* The chart's name, or nameOverride. */}}
{{- define "verdict.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: fullnameOverride, or <release>-<chart> (the release alone when it
already contains the chart's name). 63 characters at most (a DNS label). */}}
{{- define "verdict.fullname" -}}
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

{{- define "verdict.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "verdict.labels" -}}
helm.sh/chart: {{ include "verdict.chart" . }}
{{ include "verdict.selectorLabels" . }}
app.kubernetes.io/version: {{ include "verdict.imageTag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector of the release's objects; the server and runner add app.kubernetes.io/component. */}}
{{- define "verdict.selectorLabels" -}}
app.kubernetes.io/name: {{ include "verdict.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "verdict.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "verdict.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "verdict.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "verdict.image" -}}
{{- printf "%s:%s" .Values.image.repository (include "verdict.imageTag" .) }}
{{- end }}

{{/* The Secret the pods read: existingSecret, or the chart's own. */}}
{{- define "verdict.secretName" -}}
{{- default (include "verdict.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* The server's in-cluster URL, which the runners call. */}}
{{- define "verdict.serviceURL" -}}
{{- printf "http://%s:%v" (include "verdict.fullname" .) .Values.service.port }}
{{- end }}

{{/* VERDICT_PUBLIC_URL: config.publicURL, else the first ingress host, else the service. */}}
{{- define "verdict.publicURL" -}}
{{- if .Values.config.publicURL }}
{{- .Values.config.publicURL }}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts }}
{{- $host := (first .Values.ingress.hosts).host }}
{{- printf "%s://%s" (ternary "https" "http" (gt (len .Values.ingress.tls) 0)) $host }}
{{- else }}
{{- include "verdict.serviceURL" . }}
{{- end }}
{{- end }}

{{/* Whether the pods get DATABASE_URL and REDIS_URL: given in values, or (unknowable here)
carried by an existingSecret. */}}
{{- define "verdict.hasSharedState" -}}
{{- if or .Values.secrets.existingSecret (and .Values.secrets.databaseURL .Values.secrets.redisURL) }}true{{ end }}
{{- end }}

{{/* Refuses value sets that cannot work. Included by the server Deployment. */}}
{{- define "verdict.validate" -}}
{{- if lt (int .Values.replicaCount) 1 }}
{{- fail "replicaCount must be at least 1" }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (not (include "verdict.hasSharedState" .)) }}
{{- fail (printf "replicaCount=%v needs PostgreSQL and Redis: set secrets.databaseURL (postgres://…) and secrets.redisURL (redis://…), or secrets.existingSecret with DATABASE_URL and REDIS_URL. A SQLite file belongs to one process, and rate limits, login lockout and Socket.IO events are shared only through Redis." .Values.replicaCount) }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (eq .Values.config.runner "embedded") }}
{{- fail "config.runner=embedded runs suites inside the server pod; use it with replicaCount=1 only" }}
{{- end }}
{{- if not (has .Values.config.runner (list "none" "embedded")) }}
{{- fail (printf "config.runner must be none or embedded, got %q" .Values.config.runner) }}
{{- end }}
{{- if not (has .Values.config.backend (list "docker" "kubernetes")) }}
{{- fail (printf "config.backend must be docker or kubernetes, got %q" .Values.config.backend) }}
{{- end }}
{{- if and (eq .Values.config.backend "kubernetes") (ne .Values.config.runner "embedded") }}
{{- fail "config.backend=kubernetes is the embedded runner's backend: set config.runner=embedded with it, or runner.backend=kubernetes for the runner Deployment" }}
{{- end }}
{{- if not (has .Values.runner.backend (list "docker" "kubernetes")) }}
{{- fail (printf "runner.backend must be docker or kubernetes, got %q" .Values.runner.backend) }}
{{- end }}
{{- if include "verdict.kubeRBAC" . }}
{{- $k := .Values.runner.kubernetes }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" (include "verdict.runsNamespace" .)) }}
{{- fail (printf "runner.kubernetes.namespace must be a namespace name (lower-case letters, digits and '-'), got %q" $k.namespace) }}
{{- end }}
{{- if not (has $k.pullPolicy (list "Always" "IfNotPresent" "Never")) }}
{{- fail (printf "runner.kubernetes.pullPolicy must be Always, IfNotPresent or Never, got %q" $k.pullPolicy) }}
{{- end }}
{{- end }}
{{- with .Values.secrets.databaseURL }}
{{- if not (or (hasPrefix "postgres://" .) (hasPrefix "postgresql://" .)) }}
{{- fail "secrets.databaseURL must be a postgres:// URL (SQLite is the default when it is empty)" }}
{{- end }}
{{- end }}
{{- with .Values.secrets.redisURL }}
{{- if not (or (hasPrefix "redis://" .) (hasPrefix "rediss://" .)) }}
{{- fail "secrets.redisURL must be a redis:// or rediss:// URL" }}
{{- end }}
{{- end }}
{{- with .Values.secrets.encryptionKey }}
{{- if not (regexMatch "^[0-9a-fA-F]{64}$" .) }}
{{- fail "secrets.encryptionKey must be 64 hex characters (32 bytes)" }}
{{- end }}
{{- end }}
{{- with .Values.secrets.jwtSecret }}
{{- if lt (len .) 32 }}
{{- fail "secrets.jwtSecret must be at least 32 bytes" }}
{{- end }}
{{- end }}
{{- end }}

{{/* An env entry read from the Secret: (list ctx NAME required). */}}
{{- define "verdict.secretEnv" -}}
{{- $ctx := index . 0 -}}
- name: {{ index . 1 }}
  valueFrom:
    secretKeyRef:
      name: {{ include "verdict.secretName" $ctx }}
      key: {{ index . 1 }}
      {{- if not (index . 2) }}
      optional: true
      {{- end }}
{{- end }}

{{/* Suites on Kubernetes (runner.backend=kubernetes, or config.backend=kubernetes with the
embedded runner): every Verdict process that runs or removes Jobs gets VERDICT_BACKEND=kubernetes
and these VERDICT_K8S_* settings, a service account token, and the Role in the runs' namespace. */}}

{{/* The namespace the runs' Jobs go to: runner.kubernetes.namespace, else the release's. */}}
{{- define "verdict.runsNamespace" -}}
{{- default .Release.Namespace .Values.runner.kubernetes.namespace }}
{{- end }}

{{/* "true" when the runner Deployment runs suites as Jobs. */}}
{{- define "verdict.runnerOnKube" -}}
{{- if and .Values.runner.enabled (eq .Values.runner.backend "kubernetes") }}true{{ end }}
{{- end }}

{{/* The server's backend: config.backend with the embedded runner; else docker, which the
server does not open (VERDICT_RUNNER=none opens no backend: the runners clean up their own). */}}
{{- define "verdict.serverBackend" -}}
{{- if eq .Values.config.runner "embedded" }}
{{- .Values.config.backend }}
{{- else }}docker
{{- end }}
{{- end }}

{{/* "true" when the server calls the Kubernetes API. */}}
{{- define "verdict.serverOnKube" -}}
{{- if eq (include "verdict.serverBackend" .) "kubernetes" }}true{{ end }}
{{- end }}

{{/* "true" when the Role and RoleBinding are needed. */}}
{{- define "verdict.kubeRBAC" -}}
{{- if or (include "verdict.runnerOnKube" .) (include "verdict.serverOnKube" .) }}true{{ end }}
{{- end }}

{{/* The runner Deployment's service account: its own (<fullname>-runner) on Kubernetes, which
alone gets the Role; the server's otherwise. */}}
{{- define "verdict.runnerServiceAccountName" -}}
{{- if include "verdict.runnerOnKube" . }}
{{- printf "%s-runner" (include "verdict.fullname" .) }}
{{- else }}
{{- include "verdict.serviceAccountName" . }}
{{- end }}
{{- end }}

{{/* The Kubernetes backend's settings, NAME: value (a dict), for the runner's env and the
server's ConfigMap. KUBECONFIG stays unset: the in-cluster configuration. */}}
{{- define "verdict.kubeEnv" -}}
{{- $k := .Values.runner.kubernetes -}}
VERDICT_BACKEND: "kubernetes"
VERDICT_K8S_NAMESPACE: {{ include "verdict.runsNamespace" . | quote }}
VERDICT_K8S_HELPER_IMAGE: {{ default (include "verdict.image" .) $k.helperImage | quote }}
VERDICT_K8S_PULL_POLICY: {{ $k.pullPolicy | quote }}
VERDICT_K8S_START_TIMEOUT: {{ $k.startTimeout | toString | quote }}
{{- end }}
