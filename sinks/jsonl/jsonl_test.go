package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sinks/sinktest"
)

// flaky is a file writer that fails while broken is set.
type flaky struct {
	f      *os.File
	broken atomic.Bool
}

func (w *flaky) Write(p []byte) (int, error) {
	if w.broken.Load() {
		return 0, errors.New("disk on fire")
	}
	return w.f.Write(p)
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestConformance(t *testing.T) {
	sinktest.Run(t, sinktest.Harness{
		Features: sinktest.Features{Batches: true, Transient: true},
		New: func(t *testing.T) sinktest.Instance {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			w := &flaky{f: f}
			s, err := New(Config{Writer: w, Fsync: true})
			if err != nil {
				t.Fatal(err)
			}
			return sinktest.Instance{
				Sink:  s,
				Close: s.Close,
				Delivered: func(t *testing.T) []string {
					var ids []string
					for _, l := range readLines(t, path) {
						ids = append(ids, l["id"].(string))
					}
					return ids
				},
				Fail: func(t *testing.T, f sinktest.Failure) { w.broken.Store(f == sinktest.Transient) },
			}
		},
	})
}

func TestRecordFormat(t *testing.T) {
	var buf bytes.Buffer
	s, err := New(Config{Writer: &buf})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	msgs := []*pacer.Message{
		{ID: "t/0/1", Key: []byte("k"), Value: []byte(`{"a":1}`), Headers: map[string]string{"h": "v"}, Topic: "t", Partition: 2, Offset: 1, Timestamp: ts},
		{ID: "t/0/2", Key: []byte{0xff}, Value: []byte{0xc3, 0x28}},
	}
	res := make([]pacer.Result, 2)
	s.Deliver(context.Background(), msgs, res)
	want := `{"id":"t/0/1","key":"k","value":"{\"a\":1}","headers":{"h":"v"},"topic":"t","partition":2,"offset":1,"timestamp":"2026-01-02T03:04:05Z"}
{"id":"t/0/2","key":"/w==","key_encoding":"base64","value":"wyg=","value_encoding":"base64","partition":0,"offset":0}
`
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	for i, r := range res {
		if r.Outcome != pacer.Delivered {
			t.Errorf("result %d: %+v", i, r)
		}
	}
}

func TestDeadLetter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.jsonl")
	now := time.Date(2026, 5, 5, 5, 5, 5, 0, time.UTC)
	s, err := New(Config{Path: path, Fsync: true, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	m := &pacer.Message{ID: "o/1/9", Value: []byte("v"), Topic: "o", Partition: 1, Offset: 9, Delivered: 2, Attempt: 3}
	reason := &pacer.DeadLetterError{Kind: pacer.ErrRetriesExhausted, Attempts: 5, Last: errors.New("503")}
	if err := s.DeadLetter(context.Background(), m, reason); err != nil {
		t.Fatal(err)
	}
	if err := s.DeadLetter(context.Background(), m, fmt.Errorf("plain")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.DeadLetter(context.Background(), m, reason); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v want ErrClosed", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.DeadLetter(ctx, m, reason); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled ctx: %v", err)
	}
	lines := readLines(t, path)
	if len(lines) != 2 {
		t.Fatalf("%d lines want 2", len(lines))
	}
	l := lines[0]
	if l["id"] != "o/1/9" || l["reason"] != reason.Error() || l["attempts"] != 5.0 || l["delivered"] != 2.0 ||
		l["dead_lettered_at"] != "2026-05-05T05:05:05Z" || l["topic"] != "o" || l["offset"] != 9.0 {
		t.Errorf("dead letter line = %v", l)
	}
	if lines[1]["attempts"] != 3.0 || lines[1]["reason"] != "plain" {
		t.Errorf("plain reason line = %v (attempts from m.Attempt)", lines[1])
	}
}

func TestConcurrentLinesDoNotInterleave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	s, err := New(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	big := bytes.Repeat([]byte("x"), 10000)
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				m := &pacer.Message{ID: fmt.Sprintf("%d-%d", g, i), Value: big}
				if i%2 == 0 {
					s.Deliver(context.Background(), []*pacer.Message{m, m}, make([]pacer.Result, 2))
				} else {
					_ = s.DeadLetter(context.Background(), m, errors.New("r"))
				}
			}
		})
	}
	wg.Wait()
	if n := len(readLines(t, path)); n != 8*(10*2+10) {
		t.Errorf("%d lines want %d", n, 8*30)
	}
}

func TestOpenError(t *testing.T) {
	if _, err := New(Config{Path: filepath.Join(t.TempDir(), "no", "such", "dir", "f")}); err == nil {
		t.Error("New with an unwritable path succeeded")
	}
}
