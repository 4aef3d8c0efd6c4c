package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/algorithms"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/metrics"
)

type algorithmsRate = algorithms.Rate

// metricsHooks returns the engine hooks that export metrics on reg (the
// worker's own registry, never the global one).
func metricsHooks(reg *prometheus.Registry) (pacer.Hooks, error) {
	m, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	return pacer.Hooks{m}, nil
}
