//go:build tools

// Package tools pins the modules pacer uses, so that `go mod tidy` run
// before every package imports them keeps them in go.mod. Never built.
package tools

import (
	_ "github.com/IBM/sarama"
	_ "github.com/alecthomas/kong"
	_ "github.com/alicebob/miniredis/v2"
	_ "github.com/go-redis/redis_rate/v10"
	_ "github.com/goccy/go-yaml"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/nats-io/nats-server/v2/server"
	_ "github.com/nats-io/nats.go"
	_ "github.com/nats-io/nats.go/jetstream"
	_ "github.com/olekukonko/tablewriter"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/redis/go-redis/v9"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/testcontainers/testcontainers-go"
	_ "github.com/testcontainers/testcontainers-go/wait"
	_ "github.com/tidwall/gjson"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "go.uber.org/goleak"
	_ "go.uber.org/ratelimit"
	_ "golang.org/x/time/rate"
	_ "gonum.org/v1/plot"
	_ "gonum.org/v1/plot/plotter"
	_ "gonum.org/v1/plot/vg"
	_ "gonum.org/v1/plot/vg/draw"
	_ "modernc.org/sqlite"
	_ "pgregory.net/rapid"
)
