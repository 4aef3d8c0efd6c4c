package binarytest

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
)

// TestFatalErrorPrintedOnce: every fatal error is printed once, not
// logged and then printed again: a config problem (exit 2), a broker that
// refuses (a missing stream), a sink that cannot start, an admin port in
// use (exit 1). Each run's stderr is searched for the failure's words.
func TestFatalErrorPrintedOnce(t *testing.T) {
	url, _, _ := setupNATS(t, 0)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	const head = "source:\n  type: nats\n  nats:\n    url: %s\n    stream: %s\nshaping:\n  rate: %s\n"
	for _, tc := range []struct {
		name, cfg string
		code      int
		once      []string
	}{
		{"config problem", fmt.Sprintf(head, url, "S", "0/s") + "sink:\n  type: stdout\nadmin:\n  listen: \"\"\n",
			2, []string{"zero, which is not allowed", "1 problem(s)"}},
		{"missing stream", fmt.Sprintf(head, url, "PACER_NO_SUCH_STREAM_"+strconv.Itoa(os.Getpid()), "1/s") + "sink:\n  type: stdout\nadmin:\n  listen: \"\"\n",
			1, []string{"stream not found"}},
		{"sink cannot start", fmt.Sprintf(head, "nats://127.0.0.1:1", "S", "1/s") + "sink:\n  type: sql\n  sql:\n    driver: sqlite\n    dsn: /no/such/dir/x.db\n    create_table: true\nadmin:\n  listen: \"\"\n",
			1, []string{"create_table"}},
		{"admin port in use", fmt.Sprintf(head, url, "S", "1/s") + "sink:\n  type: stdout\nadmin:\n  listen: " + busy.Addr().String() + "\n",
			1, []string{"address already in use"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := binharness.Run(t, nil, "run", "-c", binharness.WriteFile(t, "c.yaml", tc.cfg))
			if r.Code != tc.code {
				t.Fatalf("exit %d want %d\n%s", r.Code, tc.code, r.Stderr)
			}
			for _, w := range tc.once {
				if n := strings.Count(r.Stderr, w); n != 1 {
					t.Errorf("%q appears %d times, want once:\n%s", w, n, r.Stderr)
				}
			}
			if n := strings.Count(r.Stderr, "level=ERROR"); n > 1 {
				t.Errorf("%d ERROR lines, want at most one:\n%s", n, r.Stderr)
			}
		})
	}
}
