// Package telemetry builds the OpenTelemetry tracer provider the worker
// traces with, from the config's telemetry section and the standard OTEL_*
// environment variables (which the OTLP exporters and the resource read
// themselves for anything the section leaves empty).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/pacer-dev/pacer/internal/app/config"
)

// New returns the tracer provider for t, or nil when tracing is off; its
// Shutdown flushes the spans not yet exported. lookup reads the environment
// (os.LookupEnv in the worker); version is service.version. Nothing is
// dialled here: the exporter connects when it first exports.
func New(ctx context.Context, t config.Tracing, lookup func(string) (string, bool), version string) (*sdktrace.TracerProvider, error) {
	if !t.Enabled {
		return nil, nil
	}
	exp, err := exporter(ctx, t, lookup)
	if err != nil {
		return nil, err
	}
	name := t.ServiceName
	if name == "" {
		if v, ok := lookup("OTEL_SERVICE_NAME"); ok && v != "" {
			name = v
		} else {
			name = "pacer"
		}
	}
	// The environment's OTEL_RESOURCE_ATTRIBUTES first, then what pacer
	// knows (a later resource wins on conflicts).
	res, err := resource.Merge(resource.Environment(),
		resource.NewSchemaless(semconv.ServiceName(name), semconv.ServiceVersion(version)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(t.SampleRatio))),
	)
	return tp, nil
}

// Protocol is the OTLP protocol t uses: its own, else the environment's,
// else grpc.
func Protocol(t config.Tracing, lookup func(string) (string, bool)) string {
	if t.Protocol != "" {
		return t.Protocol
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v, ok := lookup(k); ok && v != "" {
			return v
		}
	}
	return "grpc"
}

func exporter(ctx context.Context, t config.Tracing, lookup func(string) (string, bool)) (sdktrace.SpanExporter, error) {
	url := strings.Contains(t.Endpoint, "://")
	switch p := Protocol(t, lookup); p {
	case "grpc":
		var opts []otlptracegrpc.Option
		switch {
		case url:
			opts = append(opts, otlptracegrpc.WithEndpointURL(t.Endpoint))
		case t.Endpoint != "":
			opts = append(opts, otlptracegrpc.WithEndpoint(t.Endpoint))
		}
		if t.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	case "http/protobuf":
		var opts []otlptracehttp.Option
		switch {
		case url:
			// A base URL, as OTEL_EXPORTER_OTLP_ENDPOINT: traces go to
			// /v1/traces under it unless it names a path of its own.
			u := t.Endpoint
			if rest := u[strings.Index(u, "://")+3:]; !strings.Contains(strings.TrimSuffix(rest, "/"), "/") {
				u = strings.TrimSuffix(u, "/") + "/v1/traces"
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(u))
		case t.Endpoint != "":
			opts = append(opts, otlptracehttp.WithEndpoint(t.Endpoint))
		}
		if t.Insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		return otlptracehttp.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("telemetry: OTLP protocol %q: want grpc or http/protobuf", p)
	}
}
