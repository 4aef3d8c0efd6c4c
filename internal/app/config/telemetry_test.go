package config

import (
	"strings"
	"testing"
)

func TestTelemetryDefaultsOff(t *testing.T) {
	c := mustParse(t, minimal, nil)
	if got := c.Telemetry.Tracing; got.Enabled || got.SampleRatio != 1 {
		t.Errorf("default tracing = %+v, want off with sample_ratio 1", got)
	}
	c = mustParse(t, minimal+`telemetry:
  tracing:
    enabled: true
    protocol: http/protobuf
    endpoint: http://otel-collector:4318
    sample_ratio: 0.25
    service_name: orders
`, nil)
	want := Tracing{Enabled: true, Protocol: "http/protobuf", Endpoint: "http://otel-collector:4318", SampleRatio: 0.25, ServiceName: "orders"}
	if c.Telemetry.Tracing != want {
		t.Errorf("tracing = %+v, want %+v", c.Telemetry.Tracing, want)
	}
}

func TestTelemetryProblems(t *testing.T) {
	cases := []struct{ yaml, path, msg string }{
		{"enabled: true\n    protocol: thrift", "telemetry.tracing.protocol", `"thrift" is not one of grpc, http/protobuf`},
		{"enabled: true\n    sample_ratio: 1.5", "telemetry.tracing.sample_ratio", "between 0 and 1"},
		{"enabled: true\n    endpoint: ftp://x:1", "telemetry.tracing.endpoint", "want host:port or an http(s):// URL"},
		{"enabled: true\n    endpoint: https://x:4318\n    insecure: true", "telemetry.tracing.insecure", "the URL's scheme"},
		{"endpoint: collector:4317", "telemetry.tracing.enabled", "enabled is false"},
	}
	for _, tc := range cases {
		ps := problemsOf(t, minimal+"telemetry:\n  tracing:\n    "+tc.yaml+"\n", nil)
		found := false
		for _, p := range ps {
			if p.Path == tc.path && strings.Contains(p.Msg, tc.msg) && p.Line > 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: problems %v, want %s: ...%s... with a line", tc.yaml, ps, tc.path, tc.msg)
		}
	}
}

func TestTelemetrySummary(t *testing.T) {
	c := mustParse(t, minimal+"telemetry:\n  tracing:\n    enabled: true\n    protocol: grpc\n    endpoint: otel:4317\n    sample_ratio: 0.25\n", nil)
	if s := c.Summary(); !strings.Contains(s, "Traces each message to OTLP grpc at otel:4317, keeping 25% of new traces.") {
		t.Errorf("summary does not say where traces go:\n%s", s)
	}
	if s := mustParse(t, minimal, nil).Summary(); strings.Contains(s, "Traces") {
		t.Errorf("summary mentions traces with tracing off:\n%s", s)
	}
}
