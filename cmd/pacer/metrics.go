package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
)

type algorithmsRate = algorithms.Rate

// metricsHooks returns the engine hooks that export metrics on reg.
// TODO(issue 7): use pacer/metrics.New(reg) once it is committed.
func metricsHooks(reg *prometheus.Registry) pacer.Hooks {
	return nil
}
