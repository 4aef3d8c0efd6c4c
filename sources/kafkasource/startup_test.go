package kafkasource_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// TestRunWaitsForBrokers: started while no broker answers, Run does not
// fail: it retries with a clear warning, Ready says why, and it consumes
// once the broker comes up.
func TestRunWaitsForBrokers(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var logs testkit.LogBuffer
	s, err := kafkasource.New(kafkasource.Config{Client: kafkasource.Client{Brokers: []string{addr}}, Group: "g", Topics: []string{"t"},
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var got atomic.Int64
	go func() {
		done <- s.Run(ctx, func(ctx context.Context, m *pacer.Message) error { got.Add(1); return m.Acker.Ack(ctx) })
	}()
	defer func() { cancel(); <-done }()
	testkit.Eventually(t, 20*time.Second, "a retry warning", func() bool { return strings.Contains(logs.String(), "kafka: brokers unreachable; retrying") })
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while the broker was down; want it to wait", err)
	default:
	}
	if err := s.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "connecting") {
		t.Errorf("Ready while the broker is down = %v, want a connecting error", err)
	}

	c, err := kfake.NewCluster(kfake.Ports(port), kfake.DefaultNumPartitions(1), kfake.AllowAutoTopicCreation(),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := produce([]string{addr}, "t", recs("up", 3)); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, "3 messages once the broker is up", func() bool { return got.Load() == 3 })
	if err := s.Ready(context.Background()); err != nil {
		t.Errorf("Ready once consuming = %v", err)
	}
}
