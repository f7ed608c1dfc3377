{{/* The prefix of every object's name: the release's name when it names Turnstile (e.g. "turnstile"). */}}
{{- define "turnstile.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* A name derived from the kustomize sources' "turnstile-..." names: the same suffix on this release's prefix. */}}
{{- define "turnstile.rename" -}}
{{- printf "%s%s" (include "turnstile.fullname" .root) (trimPrefix "turnstile" .name) -}}
{{- end -}}

{{/* Helm's bookkeeping labels, on every object; the rest of an object's labels are the kustomize base's. */}}
{{- define "turnstile.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "turnstile.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
{{ include "turnstile.helmLabels" . }}
{{- end -}}

{{/* What the Services, the PDB and the NetworkPolicies select: the same two labels as the kustomize base. */}}
{{- define "turnstile.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/component: controller-manager
{{- end -}}

{{- define "turnstile.serviceAccountName" -}}
{{- include "turnstile.fullname" . -}}
{{- end -}}

{{- define "turnstile.webhookServiceName" -}}
{{- include "turnstile.fullname" . -}}-webhook-service
{{- end -}}

{{- define "turnstile.conversionServiceName" -}}
{{- include "turnstile.fullname" . -}}-conversion-service
{{- end -}}

{{- define "turnstile.tlsSecretName" -}}
{{- include "turnstile.fullname" . -}}-webhook-server-cert
{{- end -}}

{{/* The namespaces Turnstile manages; never kube-system nor its own. */}}
{{- define "turnstile.namespaceSelector" -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: [kube-system, {{ .Release.Namespace }}]
{{- with .Values.namespacePolicy.matchExpressions }}
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.namespacePolicy.matchLabels }}
matchLabels:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The documents of a multi-document YAML file under files/, as a list of objects (comments-only ones dropped). */}}
{{- define "turnstile.documents" -}}
{{- $docs := list -}}
{{- range regexSplit "(?m)^---[ \t]*$" (.root.Files.Get .file) -1 -}}
{{- $obj := fromYaml . -}}
{{- if hasKey $obj "Error" -}}{{- fail (printf "%s: %s" $.file $obj.Error) -}}{{- end -}}
{{- if $obj.kind -}}{{- $docs = append $docs $obj -}}{{- end -}}
{{- end -}}
{{- toYaml (dict "items" $docs) -}}
{{- end -}}

{{- define "turnstile.checkMode" -}}
{{- if not (has .Values.certificates.mode (list "cert-manager" "self-managed")) -}}
{{- fail (printf "certificates.mode must be cert-manager or self-managed, not %q" .Values.certificates.mode) -}}
{{- end -}}
{{- end -}}
