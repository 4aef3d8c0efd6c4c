package runner

import (
	"log/slog"
	"testing"

	"github.com/pacer-dev/pacer/internal/app/config"
)

// The NATS fetch-ahead follows shaping.queue_bytes: half of it per pull,
// so fetched-ahead messages add at most 3/4 of the bound; without a byte
// bound the source's own default applies.
func TestNATSFetchBytesFollowsQueueBytes(t *testing.T) {
	for _, tc := range []struct {
		queueBytes config.ByteSize
		want       int
	}{{0, 0}, {16 << 20, 8 << 20}, {1 << 10, 512}} {
		cfg := &config.Config{}
		cfg.Shaping.QueueBytes = tc.queueBytes
		if got := natsSourceConfig(cfg, slog.New(slog.DiscardHandler)).FetchBytes; got != tc.want {
			t.Errorf("queue_bytes %d: FetchBytes = %d want %d", tc.queueBytes, got, tc.want)
		}
	}
}
