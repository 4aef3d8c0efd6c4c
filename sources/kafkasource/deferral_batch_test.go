package kafkasource_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
	"github.com/pacer-dev/pacer/pacer"
)

// TestDeferralBatchOneRefused: the Deferral sends what Defer queued in one
// request while an earlier request is answered. The deferral topic takes
// at most 2 KB per batch, and one of nine queued records is 3 KB: the
// broker refuses their batch as too large, the Deferral sends its records
// again one at a time, and exactly the large record is answered with the
// broker's error; the other eight are answered nil and stored, in the
// order Defer took them.
func TestDeferralBatchOneRefused(t *testing.T) {
	c := strictCluster(t)
	brokers := c.ListenAddrs()
	topic := testenv.UniqueName(t, "batch")
	adm, err := sarama.NewClusterAdmin(brokers, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	limit := "2048"
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"max.message.bytes": &limit}}, false)
	_ = adm.Close()
	if err != nil {
		t.Fatal(err)
	}

	// The first produce request to topic is held until release is closed,
	// so the next nine records are queued together meanwhile.
	release := make(chan struct{})
	var mu sync.Mutex
	var requests []int // records per produce request to topic
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		for _, rt := range pr.Topics {
			if rt.Topic != topic {
				continue
			}
			n := 0
			for _, rp := range rt.Partitions {
				var b kmsg.RecordBatch
				if err := b.ReadFrom(rp.Records); err == nil {
					n += int(b.NumRecords)
				}
			}
			mu.Lock()
			requests = append(requests, n)
			first := len(requests) == 1
			mu.Unlock()
			if first {
				<-release
			}
		}
		return nil, nil, false
	})

	d := deferral(t, brokers, topic)

	const large = 5 // the index of the 3 KB record
	answers := make([]chan error, 10)
	value := func(i int) []byte {
		if i == large {
			return []byte(strings.Repeat("x", 3000))
		}
		return []byte(fmt.Sprintf("v-%d", i))
	}
	for i := range answers {
		answers[i] = make(chan error, 1)
		m := &pacer.Message{Key: []byte("A"), Value: value(i), Topic: "orig", Offset: int64(i)}
		if err := d.Defer(context.Background(), m, func(err error) { answers[i] <- err }); err != nil {
			t.Fatalf("Defer %d: %v", i, err)
		}
		if i == 0 {
			testkit.Eventually(t, 10*time.Second, "the first request at the broker", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(requests) == 1
			})
		}
	}
	close(release)

	for i, ch := range answers {
		select {
		case err := <-ch:
			switch {
			case i == large && !errors.Is(err, sarama.ErrMessageSizeTooLarge):
				t.Errorf("record %d (3 KB): answered %v, want the broker's MESSAGE_TOO_LARGE", i, err)
			case i != large && err != nil:
				t.Errorf("record %d: answered %v, want nil (stored)", i, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("record %d: no answer in 30 s", i)
		}
	}
	mu.Lock()
	got := fmt.Sprint(requests)
	mu.Unlock()
	// One request of record 0, one of the nine queued behind it (refused),
	// then the nine one by one.
	if want := "[1 9 1 1 1 1 1 1 1 1 1]"; got != want {
		t.Errorf("records per produce request: %s, want %s", got, want)
	}

	var want []string
	for i := range answers {
		if i != large {
			want = append(want, string(value(i)))
		}
	}
	if stored := readValues(t, brokers, topic, len(want)); fmt.Sprint(stored) != fmt.Sprint(want) {
		t.Errorf("stored %v, want %v", stored, want)
	}
}

// readValues reads n records' values from topic's partition 0.
func readValues(t *testing.T, brokers []string, topic string, n int) []string {
	t.Helper()
	cons, err := sarama.NewConsumer(brokers, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var out []string
	for len(out) < n {
		select {
		case m := <-pc.Messages():
			out = append(out, string(m.Value))
		case <-time.After(10 * time.Second):
			t.Fatalf("read %d of %d records of %s in 10 s", len(out), n, topic)
		}
	}
	return out
}
