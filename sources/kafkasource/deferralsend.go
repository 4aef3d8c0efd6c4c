package kafkasource

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// How the Deferral sends (see Deferral): one goroutine takes what Defer
// queued, in rounds. A round's records are sent as one record batch per
// partition, one produce request per leader (leaders in parallel), and the
// round ends once every record is answered: stored, refused, or its
// retries spent. The next round starts only then, so a partition has at
// most one batch in flight and a retried batch is never overtaken.

// maxRecordOverhead bounds what a record adds to its batch beside its key,
// value and headers (length, attributes, deltas, key and value lengths,
// header count), as sarama counts it.
const maxRecordOverhead = 5*binary.MaxVarintLen32 + binary.MaxVarintLen64 + 1

// recordBatchOverhead is a v2 record batch's header, with its offset and
// length.
const recordBatchOverhead = 61

// send runs the rounds until Close, then sends what is still queued and
// closes d.stopped.
func (d *Deferral) send() {
	defer close(d.stopped)
	for {
		round, closed := d.take()
		if len(round) > 0 {
			d.sendRound(round)
			d.recycle(round)
			continue
		}
		if closed {
			return
		}
		<-d.wake
	}
}

// take returns the queued records, from the oldest, up to
// Producer.MaxMessageBytes of them (at least one), and whether Close was
// called. Defer calls waiting for room are woken.
func (d *Deferral) take() (round []*deferredRecord, closed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.queued) == 0 {
		return nil, d.closed
	}
	n, size := 0, recordBatchOverhead
	for n < len(d.queued) && (n == 0 || size+d.queued[n].size <= d.sc.Producer.MaxMessageBytes) {
		size += d.queued[n].size
		n++
	}
	if n == len(d.queued) {
		round, d.queued, d.spare = d.queued, d.spare[:0], nil
	} else {
		round = slices.Clone(d.queued[:n])
		rest := copy(d.queued, d.queued[n:])
		clear(d.queued[rest:])
		d.queued = d.queued[:rest]
	}
	close(d.space)
	d.space = make(chan struct{})
	return round, d.closed
}

// recycle keeps a round's slice for a later one.
func (d *Deferral) recycle(round []*deferredRecord) {
	clear(round)
	d.mu.Lock()
	if d.spare == nil {
		d.spare = round[:0]
	}
	d.mu.Unlock()
}

// sendRound sends the round's records and calls each done: the records
// are placed in partitions (placed once: a retry goes to the same
// partition), sent, and what failed for a reason that may pass (a leader
// moving, a lost connection, a timeout) is sent again after the retry
// backoff, up to Producer.Retry.Max times.
func (d *Deferral) sendRound(round []*deferredRecord) {
	if err := d.place(round); err != nil {
		answer(round, err)
		return
	}
	for i, r := range round {
		r.seq = i
	}
	pending := round
	for attempt := 0; ; attempt++ {
		retry, err := d.sendOnce(pending)
		if len(retry) == 0 {
			return
		}
		if attempt >= d.sc.Producer.Retry.Max {
			answer(retry, fmt.Errorf("kafka: defer to %s: retries spent: %w", d.cfg.Topic, err))
			return
		}
		time.Sleep(d.retryBackoff(attempt + 1))
		_ = d.client.RefreshMetadata(d.cfg.Topic) // a failure shows in the next attempt
		pending = retry
	}
}

func (d *Deferral) retryBackoff(retries int) time.Duration {
	if f := d.sc.Producer.Retry.BackoffFunc; f != nil {
		return f(retries, d.sc.Producer.Retry.Max)
	}
	return d.sc.Producer.Retry.Backoff
}

// place sets each record's partition with the producer's partitioner (by
// default a hash of the key, as sarama's producers place records).
func (d *Deferral) place(round []*deferredRecord) error {
	var partitions []int32
	var err error
	if d.partitioner.RequiresConsistency() {
		partitions, err = d.client.Partitions(d.cfg.Topic)
	} else {
		partitions, err = d.client.WritablePartitions(d.cfg.Topic)
	}
	if err == nil && len(partitions) == 0 {
		err = sarama.ErrLeaderNotAvailable
	}
	if err != nil {
		return fmt.Errorf("kafka: defer to %s: partitions: %w", d.cfg.Topic, err)
	}
	var pm sarama.ProducerMessage
	for _, r := range round {
		pm.Topic, pm.Key = d.cfg.Topic, nil
		if r.rec.Key != nil {
			pm.Key = sarama.ByteEncoder(r.rec.Key)
		}
		i, err := d.partitioner.Partition(&pm, int32(len(partitions)))
		if err != nil {
			return fmt.Errorf("kafka: defer to %s: partitioner: %w", d.cfg.Topic, err)
		}
		if i < 0 || int(i) >= len(partitions) {
			return fmt.Errorf("kafka: defer to %s: %w", d.cfg.Topic, sarama.ErrInvalidPartition)
		}
		r.partition = partitions[i]
	}
	return nil
}

// sendOnce sends records (in Defer's order) once, one request per leader,
// answers what is stored or refused, and returns what may be sent again,
// in order, with the last such error.
func (d *Deferral) sendOnce(records []*deferredRecord) (retry []*deferredRecord, lastErr error) {
	byLeader := map[*sarama.Broker][]*deferredRecord{}
	var leaders []*sarama.Broker
	for _, r := range records {
		leader, err := d.client.Leader(d.cfg.Topic, r.partition)
		if err != nil {
			retry, lastErr = append(retry, r), err
			continue
		}
		if _, ok := byLeader[leader]; !ok {
			leaders = append(leaders, leader)
		}
		byLeader[leader] = append(byLeader[leader], r)
	}
	if len(leaders) == 1 {
		again, err := d.produce(leaders[0], byLeader[leaders[0]])
		return append(retry, again...), cmpErr(err, lastErr)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, leader := range leaders {
		wg.Go(func() {
			again, err := d.produce(leader, byLeader[leader])
			mu.Lock()
			retry, lastErr = append(retry, again...), cmpErr(err, lastErr)
			mu.Unlock()
		})
	}
	wg.Wait()
	// Partitions are sent in order within their request; the retries keep
	// Defer's order across requests too.
	slices.SortFunc(retry, func(a, b *deferredRecord) int { return a.seq - b.seq })
	return retry, lastErr
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// produce sends records to their partitions' leader in one request and
// answers each partition's records as the broker did. It returns the
// records to send again (their partitions' errors may pass, or the
// request failed) and why.
func (d *Deferral) produce(leader *sarama.Broker, records []*deferredRecord) (retry []*deferredRecord, why error) {
	batches := d.batches(records)
	req := d.request()
	for _, b := range batches {
		req.AddBatch(d.cfg.Topic, b.partition, b.batch)
	}
	resp, err := leader.Produce(req)
	if err != nil {
		// The connection failed: what was sent may or may not be stored;
		// it is sent again on a new one (a duplicate in the deferral
		// topic, never a loss).
		_ = leader.Close()
		return records, err
	}
	for _, b := range batches {
		block := resp.GetBlock(d.cfg.Topic, b.partition)
		if block == nil {
			// Not answered: maybe stored. Refused like sarama's producers
			// refuse it, so the original is read and deferred again.
			answer(b.records, fmt.Errorf("kafka: defer to %s: %w", d.cfg.Topic, sarama.ErrIncompleteResponse))
			continue
		}
		kerr := block.Err
		switch {
		case kerr == sarama.ErrNoError:
			answer(b.records, nil)
		case retriable(kerr):
			retry, why = append(retry, b.records...), kerr
		case len(b.records) > 1 && recordError(kerr):
			// One record may spoil the batch: each is sent alone, so only
			// the records refused on their own are answered with the error.
			for _, r := range b.records {
				again, err := d.produce(leader, []*deferredRecord{r})
				retry, why = append(retry, again...), cmpErr(err, why)
			}
		default:
			answer(b.records, fmt.Errorf("kafka: defer to %s: %w", d.cfg.Topic, kerr))
		}
	}
	return retry, why
}

// partitionBatch is one partition's records in a request.
type partitionBatch struct {
	partition int32
	records   []*deferredRecord
	batch     *sarama.RecordBatch
}

// batches groups records by partition, each group in Defer's order, as
// record batches of the producer's compression.
func (d *Deferral) batches(records []*deferredRecord) []partitionBatch {
	var out []partitionBatch
	at := map[int32]int{}
	for _, r := range records {
		i, ok := at[r.partition]
		if !ok {
			i = len(out)
			at[r.partition] = i
			out = append(out, partitionBatch{partition: r.partition})
		}
		out[i].records = append(out[i].records, r)
	}
	for i := range out {
		recs := out[i].records
		first := recs[0].at.Truncate(time.Millisecond)
		for _, r := range recs[1:] {
			if t := r.at.Truncate(time.Millisecond); t.Before(first) {
				first = t
			}
		}
		b := &sarama.RecordBatch{
			Version:          2,
			Codec:            d.sc.Producer.Compression,
			CompressionLevel: d.sc.Producer.CompressionLevel,
			FirstTimestamp:   first,
			MaxTimestamp:     first,
			ProducerID:       -1,
			ProducerEpoch:    -1,
			FirstSequence:    -1,
			LastOffsetDelta:  int32(len(recs) - 1),
			Records:          make([]*sarama.Record, len(recs)),
		}
		for j, r := range recs {
			r.rec.OffsetDelta = int64(j)
			r.rec.TimestampDelta = r.at.Truncate(time.Millisecond).Sub(first)
			if t := first.Add(r.rec.TimestampDelta); t.After(b.MaxTimestamp) {
				b.MaxTimestamp = t
			}
			b.Records[j] = &r.rec
		}
		out[i].batch = b
	}
	return out
}

// request is an empty produce request of the version the config's Kafka
// version allows (as sarama's producers choose it).
func (d *Deferral) request() *sarama.ProduceRequest {
	req := &sarama.ProduceRequest{
		RequiredAcks: d.sc.Producer.RequiredAcks,
		Timeout:      int32(d.sc.Producer.Timeout / time.Millisecond),
		Version:      3,
	}
	v := d.sc.Version
	for _, at := range []struct {
		version sarama.KafkaVersion
		request int16
	}{{sarama.V1_0_0_0, 5}, {sarama.V2_0_0_0, 6}, {sarama.V2_1_0_0, 7}, {sarama.V2_4_0_0, 8}, {sarama.V2_8_0_0, 9}, {sarama.V3_7_0_0, 10}} {
		if v.IsAtLeast(at.version) {
			req.Version = at.request
		}
	}
	return req
}

// retriable reports whether a partition's error may pass (sarama's
// producers retry the same ones).
func retriable(err sarama.KError) bool {
	switch err {
	case sarama.ErrInvalidMessage, sarama.ErrUnknownTopicOrPartition, sarama.ErrLeaderNotAvailable,
		sarama.ErrNotLeaderForPartition, sarama.ErrRequestTimedOut, sarama.ErrNotEnoughReplicas,
		sarama.ErrNotEnoughReplicasAfterAppend, sarama.ErrKafkaStorageError:
		return true
	}
	return false
}

// recordError reports whether the broker refused a batch for what one of
// its records may be (too large, invalid) rather than for the partition.
func recordError(err sarama.KError) bool {
	return err == sarama.ErrMessageSizeTooLarge || err == sarama.ErrMessageSetSizeTooLarge || err == sarama.ErrInvalidRecord
}

// answer calls each record's done with err.
func answer(records []*deferredRecord, err error) {
	for _, r := range records {
		r.done(err)
	}
}
