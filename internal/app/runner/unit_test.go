package runner

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/sourcekit"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// The drain estimate follows the measurements of the last minute; with one
// it assumes the current rate.
func TestBacklogWatchDrain(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &backlogWatch{rate: func() float64 { return 100 }}
	w.record(sourcekit.Backlog{At: t0, Messages: 1000}, nil)
	if s := w.snapshot(t0); !s.Draining || s.Drain != 10*time.Second {
		t.Errorf("one measurement: drain %v %v, want 10s at 100/s", s.Drain, s.Draining)
	}
	for i := 1; i <= 6; i++ { // 10/s net over 15 s steps: 100 left
		w.record(sourcekit.Backlog{At: t0.Add(time.Duration(i) * 15 * time.Second), Messages: 1000 - int64(i)*150}, nil)
	}
	s := w.snapshot(t0.Add(90 * time.Second))
	if !s.Draining || s.Drain != 10*time.Second {
		t.Errorf("shrinking by 10/s with 100 left: drain %v %v, want 10s", s.Drain, s.Draining)
	}
	if n := len(w.samples); n > 6 {
		t.Errorf("%d samples kept, want at most a minute's worth", n)
	}
	w.record(sourcekit.Backlog{}, io.EOF)
	if s := w.snapshot(t0); s.Errors != 1 || s.Backlog.Messages != 100 || w.lastError() == "" {
		t.Errorf("after a failed read: %+v %q, want the last good measurement and 1 error", s, w.lastError())
	}
}

func TestUsefulWorkers(t *testing.T) {
	for _, c := range []struct {
		global, local float64
		want          int
	}{{400, 100, 4}, {450, 100, 5}, {100, 300, 1}, {0, 100, 0}, {100, 0, 0}, {300, 100, 3}} {
		if got := usefulWorkers(c.global, c.local); got != c.want {
			t.Errorf("usefulWorkers(%v, %v) = %d want %d", c.global, c.local, got, c.want)
		}
	}
}

func TestUnreachable(t *testing.T) {
	if unreachable(fmt.Errorf("sink: %w", io.EOF)) {
		t.Error("io.EOF counted as unreachable")
	}
	_, err := http.Get("http://127.0.0.1:1/")
	if !unreachable(err) {
		t.Errorf("connection refused not counted as unreachable: %v", err)
	}
}

// source.kafka's commit and fetch timing reach the Kafka source: the
// defaults as the source's own, and commit_after none (or the older 0) as
// "never early" (pacer.None).
func TestKafkaTimingKnobs(t *testing.T) {
	base := "source:\n  type: kafka\n  kafka:\n    brokers: [127.0.0.1:9092]\n    topics: [t]\n%sshaping:\n  rate: 10/s\nsink:\n  type: stdout\n"
	for _, tc := range []struct {
		name, extra    string
		interval, wait time.Duration
		after          int
	}{
		{"defaults", "", kafkasource.DefaultCommitInterval, kafkasource.DefaultFetchMaxWait, kafkasource.DefaultCommitAfter},
		{"set", "    commit_interval: 250ms\n    commit_after: 4\n    fetch_max_wait: 20ms\n", 250 * time.Millisecond, 20 * time.Millisecond, 4},
		{"never early", "    commit_after: none\n", kafkasource.DefaultCommitInterval, kafkasource.DefaultFetchMaxWait, pacer.None},
		{"never early, as 0 said it", "    commit_after: 0\n", kafkasource.DefaultCommitInterval, kafkasource.DefaultFetchMaxWait, pacer.None},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(fmt.Sprintf(base, tc.extra)), nil)
			if err != nil {
				t.Fatal(err)
			}
			k := kafkaSourceConfig(cfg, nil)
			if k.CommitInterval != tc.interval || k.CommitAfter != tc.after || k.FetchMaxWait != tc.wait {
				t.Errorf("kafka source: commit interval %v, after %d, fetch max wait %v; want %v, %d, %v",
					k.CommitInterval, k.CommitAfter, k.FetchMaxWait, tc.interval, tc.after, tc.wait)
			}
		})
	}
	_, err := config.Parse([]byte(fmt.Sprintf(base, "    commit_after: -1\n    fetch_max_wait: 1m\n")), nil)
	if err == nil || !strings.Contains(err.Error(), "commit_after") || !strings.Contains(err.Error(), "fetch_max_wait") {
		t.Errorf("negative commit_after and a 1m fetch_max_wait: %v, want both refused", err)
	}
}

// A limit the file turns off reaches the engine as pacer.None; one left
// out takes the library's default (max_time's is no limit).
func TestNoneReachesTheEngine(t *testing.T) {
	base := "source:\n  type: nats\n  nats:\n    stream: S\n    filter_subject: s\nshaping:\n  rate: 10/s\n%ssink:\n  type: stdout\nretry:\n%s"
	for _, tc := range []struct {
		name, shaping, retry string
		attempts             int
		maxWait, maxTime     time.Duration
	}{
		{"defaults", "", "", pacer.DefaultMaxAttempts, pacer.DefaultMaxWait, pacer.None},
		{"none", "  max_wait: none\n", "  max_attempts: none\n  max_time: none\n", pacer.None, pacer.None, pacer.None},
		{"zeros", "  max_wait: 0s\n", "  max_attempts: 0\n  max_time: 0s\n", pacer.None, pacer.None, pacer.None},
		{"set", "  max_wait: 2s\n", "  max_attempts: 3\n  max_time: 1m\n", 3, 2 * time.Second, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(fmt.Sprintf(base, tc.shaping, tc.retry)), nil)
			if err != nil {
				t.Fatal(err)
			}
			ec, err := engineConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			sh, err := LocalShaping(cfg.Shaping, time.Unix(0, 0))
			if err != nil {
				t.Fatal(err)
			}
			if ec.Retry.MaxAttempts != tc.attempts || ec.Retry.MaxTime != tc.maxTime || sh.MaxWait != tc.maxWait {
				t.Errorf("engine: max attempts %d, max time %v, max wait %v; want %d, %v, %v",
					ec.Retry.MaxAttempts, ec.Retry.MaxTime, sh.MaxWait, tc.attempts, tc.maxTime, tc.maxWait)
			}
		})
	}
}
