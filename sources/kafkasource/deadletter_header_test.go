package kafkasource_test

import (
	"testing"

	"github.com/IBM/sarama"

	"github.com/pacer-dev/pacer/sources/kafkasource"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// TestDeadLetterHeadersSpelledAsNATS: the headers both sources add to a
// dead letter have one spelling, Pacer-Dlq-*.
func TestDeadLetterHeadersSpelledAsNATS(t *testing.T) {
	for _, tc := range []struct{ kafka, nats string }{
		{kafkasource.HeaderReason, natssource.HeaderReason},
		{kafkasource.HeaderAttempts, natssource.HeaderAttempts},
		{kafkasource.HeaderID, natssource.HeaderID},
		{kafkasource.HeaderDelivered, natssource.HeaderDelivered},
		{kafkasource.HeaderTime, natssource.HeaderTime},
	} {
		if tc.kafka != tc.nats {
			t.Errorf("Kafka dead-letter header %q, NATS %q: want one spelling", tc.kafka, tc.nats)
		}
	}
	for _, h := range []string{kafkasource.HeaderTopic, kafkasource.HeaderPartition, kafkasource.HeaderOffset} {
		if h[:len("Pacer-Dlq-")] != "Pacer-Dlq-" {
			t.Errorf("Kafka dead-letter header %q, want the Pacer-Dlq- prefix", h)
		}
	}
}

// TestDeadLetterHeaderReadsBothSpellings: a dead letter written before the
// headers were spelled Pacer-Dlq-* (pacer-dlq-*) reads back as one written
// after.
func TestDeadLetterHeaderReadsBothSpellings(t *testing.T) {
	old := []*sarama.RecordHeader{
		{Key: []byte("trace"), Value: []byte("t1")},
		{Key: []byte("pacer-dlq-reason"), Value: []byte("http 422")},
		{Key: []byte("pacer-dlq-original-id"), Value: []byte("orders/1/42")},
	}
	current := []*sarama.RecordHeader{
		{Key: []byte("trace"), Value: []byte("t1")},
		{Key: []byte("Pacer-Dlq-Reason"), Value: []byte("http 422")},
		{Key: []byte("Pacer-Dlq-Original-Id"), Value: []byte("orders/1/42")},
	}
	for name, hs := range map[string][]*sarama.RecordHeader{"pacer-dlq-*": old, "Pacer-Dlq-*": current} {
		if v, ok := kafkasource.DeadLetterHeader(hs, kafkasource.HeaderReason); !ok || v != "http 422" {
			t.Errorf("%s: reason = %q, %v; want \"http 422\"", name, v, ok)
		}
		if v, ok := kafkasource.DeadLetterHeader(hs, kafkasource.HeaderID); !ok || v != "orders/1/42" {
			t.Errorf("%s: original id = %q, %v; want orders/1/42", name, v, ok)
		}
		if v, ok := kafkasource.DeadLetterHeader(hs, kafkasource.HeaderAttempts); ok {
			t.Errorf("%s: attempts = %q, found in a record without it", name, v)
		}
	}
}
