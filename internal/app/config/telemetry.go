package config

import (
	"net/url"
	"strings"
)

// Telemetry configures OpenTelemetry. Off by default; the standard OTEL_*
// environment variables (OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS, _PROTOCOL,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, ...) apply to whatever a
// field here leaves empty.
type Telemetry struct {
	Tracing Tracing `yaml:"tracing" json:"tracing"`
}

// Tracing configures traces: one span per message from consume to settle,
// exported over OTLP.
type Tracing struct {
	// Enabled turns tracing on. Off, pacer pays nothing for it.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Protocol is the OTLP transport: "grpc" or "http/protobuf"; "" takes
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL,
	// else grpc.
	Protocol string `yaml:"protocol" json:"protocol"`
	// Endpoint is the collector: host:port, or a URL (http:// for
	// plaintext); "" takes the OTEL_EXPORTER_OTLP_* variables, else
	// localhost:4317 (grpc) or localhost:4318 (http).
	Endpoint string `yaml:"endpoint" json:"endpoint"`
	// Insecure sends without TLS (a host:port endpoint; a URL says it
	// with its scheme).
	Insecure bool `yaml:"insecure" json:"insecure"`
	// SampleRatio is the share of new traces recorded, 0 to 1 (default 1);
	// a message that arrives with a trace context follows its sampling
	// decision.
	SampleRatio float64 `yaml:"sample_ratio" json:"sample_ratio"`
	// ServiceName is service.name; "" takes OTEL_SERVICE_NAME, else "pacer".
	ServiceName string `yaml:"service_name" json:"service_name"`
}

// DefaultTelemetry is the telemetry section's default: tracing off.
func DefaultTelemetry() Telemetry {
	return Telemetry{Tracing: Tracing{SampleRatio: 1}}
}

func (v *validator) telemetry() {
	t := v.c.Telemetry.Tracing
	if t.Protocol != "" {
		v.oneOf("telemetry.tracing.protocol", t.Protocol, "grpc", "http/protobuf")
	}
	if t.SampleRatio < 0 || t.SampleRatio > 1 {
		v.add("telemetry.tracing.sample_ratio", "must be between 0 and 1, got %g", t.SampleRatio)
	}
	if e := t.Endpoint; strings.Contains(e, "://") {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add("telemetry.tracing.endpoint", "%q: want host:port or an http(s):// URL", e)
		} else if t.Insecure {
			v.add("telemetry.tracing.insecure", "set with a URL endpoint: the URL's scheme (http or https) decides")
		}
	}
	if !t.Enabled && (t.Protocol != "" || t.Endpoint != "" || t.Insecure) {
		v.add("telemetry.tracing.enabled", "tracing settings are given but enabled is false")
	}
}
