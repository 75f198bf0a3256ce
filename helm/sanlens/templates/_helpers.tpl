{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "sanlens.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart, unless the release name already contains the chart name. */}}
{{- define "sanlens.fullname" -}}
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

{{- define "sanlens.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels: shared by every shard, so one Service and one PDB cover them all. */}}
{{- define "sanlens.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sanlens.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sanlens.labels" -}}
helm.sh/chart: {{ include "sanlens.chart" . }}
{{ include "sanlens.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sanlens
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "sanlens.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sanlens.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
registry/repository:tag, or @digest when a digest pins the image. No image is published:
the repository is where the operator pushed the one built from this repository's Dockerfile.
*/}}
{{- define "sanlens.image" -}}
{{- $repo := trim (.Values.image.repository | default "" | toString) }}
{{- if not $repo }}
{{- fail "image.repository is required: build and push the sanlens image (README: Helm, step 1) and set image.repository" }}
{{- end }}
{{- if .Values.image.registry }}
{{- $repo = printf "%s/%s" (trimSuffix "/" .Values.image.registry) $repo }}
{{- end }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repo .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repo (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}
{{- end }}

{{/* The Secret mounted as credential files, or "" when there is none. */}}
{{- define "sanlens.secretName" -}}
{{- if .Values.secret.existingSecret }}
{{- .Values.secret.existingSecret }}
{{- else if .Values.secret.create }}
{{- printf "%s-credentials" (include "sanlens.fullname" .) }}
{{- end }}
{{- end }}

{{/*
The shards as JSON {"shards": [{"name": "", "suffix": "", "config": {...}}]}.
Without `shards` there is one unnamed shard holding the whole config. With `shards`, each
gets the ontap and hosts entries it names; a name that matches no target, a target in two
shards, or a target in none is an error, so no target is silently dropped.
*/}}
{{- define "sanlens.shards" -}}
{{- $cfg := deepCopy (.Values.config | default dict) }}
{{- $out := list }}
{{- if not .Values.shards }}
{{- $out = list (dict "name" "" "suffix" "" "config" $cfg) }}
{{- else }}
{{- $owner := dict }}
{{- $seen := dict }}
{{- range $s := .Values.shards }}
{{- if hasKey $seen $s.name }}{{ fail (printf "shards: name %q is used twice" $s.name) }}{{ end }}
{{- $_ := set $seen $s.name true }}
{{- $sub := deepCopy $cfg }}
{{- range $kind := list "ontap" "hosts" }}
{{- $all := get $cfg $kind | default list }}
{{- $names := list }}
{{- range $all }}{{ $names = append $names .name }}{{ end }}
{{- $mine := list }}
{{- range $want := (get $s $kind | default list) }}
{{- if not (has $want $names) }}{{ fail (printf "shards[%s].%s: %q is not a target in config.%s" $s.name $kind $want $kind) }}{{ end }}
{{- $key := printf "%s/%s" $kind $want }}
{{- if hasKey $owner $key }}{{ fail (printf "shards: %s target %q is in shards %q and %q" $kind $want (get $owner $key) $s.name) }}{{ end }}
{{- $_ := set $owner $key $s.name }}
{{- end }}
{{- range $all }}{{ if has .name (get $s $kind | default list) }}{{ $mine = append $mine . }}{{ end }}{{ end }}
{{- $_ := set $sub $kind $mine }}
{{- end }}
{{- $out = append $out (dict "name" $s.name "suffix" (printf "-%s" $s.name) "config" $sub) }}
{{- end }}
{{- range $kind := list "ontap" "hosts" }}
{{- range (get $cfg $kind | default list) }}
{{- if not (hasKey $owner (printf "%s/%s" $kind .name)) }}{{ fail (printf "shards: %s target %q is in no shard" $kind .name) }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson (dict "shards" $out) }}
{{- end }}

{{/* The exporter config file of one shard (dict "root" $ "shard" $shard). */}}
{{- define "sanlens.configFile" -}}
{{- toYaml .shard.config }}
{{- end }}

{{/* The Secret holding the web config file, or "" when webConfig is off. */}}
{{- define "sanlens.webConfigSecretName" -}}
{{- if .Values.webConfig.enabled }}
{{- .Values.webConfig.existingSecret | default (printf "%s-web-config" (include "sanlens.fullname" .)) }}
{{- end }}
{{- end }}

{{/* What the endpoints speak: https when the web config has TLS. */}}
{{- define "sanlens.scheme" -}}
{{- if and .Values.webConfig.enabled .Values.webConfig.tls }}https{{ else }}http{{ end }}
{{- end }}

{{/*
A probe from values (dict "root" $ "probe" $probe). With the web config every endpoint wants
TLS and credentials the kubelet may not have, so its httpGet becomes a tcpSocket check
(webConfig.probes=tcpSocket), `sanlens healthcheck` of its path in the container
(webConfig.probes=exec: it reads SANLENS_LISTEN and SANLENS_WEB_CONFIG_FILE, set beside the
args), or keeps its path with the scheme and webConfig.probeHttpHeaders (httpGet).
Probes without httpGet are left as given.
*/}}
{{- define "sanlens.probe" -}}
{{- $p := deepCopy .probe }}
{{- $web := .root.Values.webConfig }}
{{- if and $web.enabled (hasKey $p "httpGet") }}
{{- if eq $web.probes "tcpSocket" }}
{{- $port := $p.httpGet.port | default "http" }}
{{- $_ := unset $p "httpGet" }}
{{- $_ := set $p "tcpSocket" (dict "port" $port) }}
{{- else if eq $web.probes "exec" }}
{{- $path := $p.httpGet.path | default "/-/healthy" }}
{{- $_ := unset $p "httpGet" }}
{{- $_ := set $p "exec" (dict "command" (list "sanlens" "healthcheck" "--path" $path)) }}
{{- else }}
{{- $_ := set $p.httpGet "scheme" (upper (include "sanlens.scheme" .root)) }}
{{- with $web.probeHttpHeaders }}{{ $_ := set $p.httpGet "httpHeaders" . }}{{ end }}
{{- end }}
{{- end }}
{{- toYaml $p }}
{{- end }}

{{/* How the liveness probe is made, as rendered: tcpSocket, httpGet, or exec (`sanlens healthcheck`). */}}
{{- define "sanlens.probeKind" -}}
{{- $p := include "sanlens.probe" (dict "root" . "probe" (.Values.livenessProbe | default dict)) | fromYaml }}
{{- if hasKey $p "exec" }}exec (sanlens healthcheck){{ else if hasKey $p "tcpSocket" }}tcpSocket{{ else if hasKey $p "httpGet" }}httpGet{{ else }}no probe{{ end }}
{{- end }}

{{/* Render errors for web config values that cannot work together. */}}
{{- define "sanlens.checkWebConfig" -}}
{{- $web := .Values.webConfig }}
{{- if $web.enabled }}
{{- if not $web.existingSecret }}
{{- if not $web.config }}
{{- fail "webConfig.enabled: set webConfig.config (the chart makes the Secret) or webConfig.existingSecret" }}
{{- end }}
{{- $tls := get $web.config "tls_server_config" | default dict }}
{{- if and $web.tls (not $tls) }}
{{- fail "webConfig.tls is true but webConfig.config has no tls_server_config: add it, or set webConfig.tls=false for plain HTTP" }}
{{- end }}
{{- if and $tls (not $web.tls) }}
{{- fail "webConfig.config has tls_server_config but webConfig.tls is false: the probes and the ServiceMonitor would speak plain HTTP to a TLS port" }}
{{- end }}
{{- if and (eq $web.probes "httpGet") (eq (get $tls "client_auth_type" | default "") "RequireAndVerifyClientCert") }}
{{- fail "webConfig.probes=httpGet cannot work with client_auth_type RequireAndVerifyClientCert: the kubelet presents no client certificate; use webConfig.probes=tcpSocket" }}
{{- end }}
{{- if and (eq $web.probes "exec") (eq (get $tls "client_auth_type" | default "") "RequireAndVerifyClientCert") (has (get $tls "max_version" | default "TLS13") (list "TLS10" "TLS11" "TLS12")) }}
{{- fail "webConfig.probes=exec with client_auth_type RequireAndVerifyClientCert needs TLS 1.3 (drop tls_server_config.max_version): under TLS 1.2 a refused handshake cannot be told from a dead server; use webConfig.probes=tcpSocket" }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
