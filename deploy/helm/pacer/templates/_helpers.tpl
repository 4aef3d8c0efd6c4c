{{/* Names, labels and the config file. */}}

{{- define "pacer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "pacer.fullname" -}}
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

{{- define "pacer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pacer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "pacer.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "pacer.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: worker
{{- end }}

{{- define "pacer.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pacer.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "pacer.configMapName" -}}
{{- .Values.existingConfigMap.name | default (include "pacer.fullname" .) }}
{{- end }}

{{- define "pacer.configKey" -}}
{{- if .Values.existingConfigMap.name }}{{ .Values.existingConfigMap.key | default "pacer.yaml" }}{{ else }}pacer.yaml{{ end }}
{{- end }}

{{/*
pacer.secretField fails the render when a secret field of the config holds
a literal value instead of a ${NAME} reference. Argument: (list PATH VALUE).
*/}}
{{- define "pacer.secretField" -}}
{{- $path := index . 0 }}{{ $v := index . 1 }}
{{- if and $v (not (contains "${" (toString $v))) }}
{{- fail (printf "config.%s holds a literal secret: put it in a Secret, list it under secretEnv (name: NAME) and write ${NAME} here" $path) }}
{{- end }}
{{- end }}

{{/*
pacer.config is the config file: .Values.config with the settings the chart
owns (admin listener, drain_timeout, the Redis URL reference), after
refusing literal secrets.
*/}}
{{- define "pacer.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) }}
{{- if hasKey $cfg "drain_timeout" }}
{{- fail "config.drain_timeout: set drainTimeoutSeconds instead (the pod's grace period is derived from it)" }}
{{- end }}
{{- $admin := dig "admin" dict $cfg }}
{{- if or (hasKey $admin "listen") (hasKey $admin "allow_remote") }}
{{- fail "config.admin.listen and allow_remote are set by the chart: set admin.port instead" }}
{{- end }}
{{- include "pacer.secretField" (list "source.kafka.sasl.password" (dig "source" "kafka" "sasl" "password" "" $cfg)) }}
{{- include "pacer.secretField" (list "source.nats.auth.token" (dig "source" "nats" "auth" "token" "" $cfg)) }}
{{- include "pacer.secretField" (list "source.nats.auth.password" (dig "source" "nats" "auth" "password" "" $cfg)) }}
{{- include "pacer.secretField" (list "shaping.global.redis_url" (dig "shaping" "global" "redis_url" "" $cfg)) }}
{{- include "pacer.secretField" (list "sink.http.bearer_token" (dig "sink" "http" "bearer_token" "" $cfg)) }}
{{- include "pacer.secretField" (list "sink.sql.dsn" (dig "sink" "sql" "dsn" "" $cfg)) }}
{{- range $name, $v := (dig "sink" "http" "headers" dict $cfg) }}
{{- if regexMatch "(?i)auth|token|key|secret|password|cookie|signature" $name }}
{{- include "pacer.secretField" (list (printf "sink.http.headers.%s" $name) $v) }}
{{- end }}
{{- end }}
{{- $_ := set $cfg "drain_timeout" (printf "%ds" (int .Values.drainTimeoutSeconds)) }}
{{- $_ := set $admin "listen" (printf "0.0.0.0:%d" (int .Values.admin.port)) }}
{{- $_ := set $admin "allow_remote" true }}
{{- $_ := set $cfg "admin" $admin }}
{{- if .Values.redis.urlSecret.name }}
{{- if dig "shaping" "global" "redis_url" "" $cfg }}
{{- fail "config.shaping.global.redis_url and redis.urlSecret are both set: keep one" }}
{{- end }}
{{- $shaping := dig "shaping" dict $cfg }}
{{- $global := dig "global" dict $shaping }}
{{- $_ := set $global "redis_url" "${PACER_REDIS_URL}" }}
{{- $_ := set $shaping "global" $global }}
{{- $_ := set $cfg "shaping" $shaping }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/* pacer.validate fails the render on impossible values. */}}
{{- define "pacer.validate" -}}
{{- if and (not .Values.existingConfigMap.name) (not .Values.config) }}
{{- fail "set config (pacer's configuration) or existingConfigMap.name" }}
{{- end }}
{{- if lt (int .Values.drainTimeoutSeconds) 1 }}
{{- fail "drainTimeoutSeconds must be at least 1" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (not (has .Values.autoscaling.kind (list "hpa" "keda"))) }}
{{- fail (printf "autoscaling.kind %q: want hpa or keda" .Values.autoscaling.kind) }}
{{- end }}
{{- if and .Values.autoscaling.enabled (eq .Values.autoscaling.kind "keda") (not .Values.autoscaling.keda.triggers) }}
{{- fail "autoscaling.kind keda needs autoscaling.keda.triggers (a kafka or nats-jetstream trigger: see the chart README)" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas is above maxReplicas" }}
{{- end }}
{{- range .Values.secretEnv }}
{{- if not (and .name .secretName .key) }}
{{- fail (printf "secretEnv entry %v: name, secretName and key are required" .) }}
{{- end }}
{{- end }}
{{- range .Values.env }}
{{- if .valueFrom }}
{{- fail (printf "env %s: valueFrom is not taken here; secrets go in secretEnv" .name) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
pacer.goMemLimit is 90% of resources.limits.memory in bytes, for GOMEMLIMIT
(the Go runtime then collects garbage harder before the kernel would kill
the container). Quantities with the suffixes Ki Mi Gi Ti K M G T or none.
*/}}
{{- define "pacer.goMemLimit" -}}
{{- $m := toString .Values.resources.limits.memory }}
{{- $digits := regexFind "^[0-9]+" $m }}
{{- $unit := substr (len $digits) (len $m) $m }}
{{- $mult := dict "" 1 "K" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 }}
{{- if or (not $digits) (not (hasKey $mult $unit)) }}
{{- fail (printf "resources.limits.memory %q: goMemLimitFromLimits understands whole numbers with Ki, Mi, Gi, Ti, K, M, G, T or no suffix; set goMemLimitFromLimits: false or write the limit so" $m) }}
{{- end }}
{{- div (mul (int64 $digits) (get $mult $unit)) 10 | mul 9 }}
{{- end }}
