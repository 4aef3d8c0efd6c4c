package kafkasource

import (
	"slices"
	"strconv"
	"strings"

	"github.com/IBM/sarama"
)

// Kafka keeps one committed offset per partition, but the engine finishes
// a partition's messages in any order: its workers take them in order and
// then race for permits, so a later message can reach the sink while an
// earlier one still waits, is retried, or is given back when the partition
// is revoked or the worker stops. The commit then stays below the earlier
// one, and a next owner starting from it would deliver the later one a
// second time although it was acked.
//
// So a partition given up with such a gap is committed at the gap, with
// the offsets already final above it in the commit's metadata; the next
// owner (another member, or this one in its next session) reads them in
// Setup and skips them: it finishes them in its watermark without handing
// them over. What it marks carries the skipped offsets it has not reached
// yet, so a further rebalance before it passes them keeps them. Metadata
// another client wrote, or metadata for another offset than the one the
// claim starts from, is ignored (the messages are delivered again, the
// at-least-once fallback).

// doneMetaPrefix starts the commit metadata pacer writes.
const doneMetaPrefix = "pacer:done:"

// maxDoneMeta bounds the metadata (Kafka refuses a commit whose metadata
// exceeds offset.metadata.max.bytes, 4096 by default): offsets that do not
// fit are left out, and the next owner delivers them again.
const maxDoneMeta = 2048

// encodeDone is the commit metadata for committed offset base with the
// final offsets done (ascending, each >= base) above it: "" when done is
// empty, else doneMetaPrefix, base, ':' and the offsets as comma-separated
// differences from base.
func encodeDone(base int64, done []int64) string {
	if len(done) == 0 {
		return ""
	}
	b := make([]byte, 0, min(maxDoneMeta, 32+4*len(done)))
	b = append(b, doneMetaPrefix...)
	b = strconv.AppendInt(b, base, 10)
	b = append(b, ':')
	for i, o := range done {
		var d [20]byte
		s := strconv.AppendInt(d[:0], o-base, 10)
		if len(b)+1+len(s) > maxDoneMeta {
			break
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, s...)
	}
	return string(b)
}

// parseDone reads encodeDone's metadata for a claim starting at base:
// the final offsets above base, ascending, or nil when meta is not
// pacer's, is malformed or was written for another offset.
func parseDone(meta string, base int64) []int64 {
	rest, ok := strings.CutPrefix(meta, doneMetaPrefix)
	if !ok {
		return nil
	}
	bs, list, ok := strings.Cut(rest, ":")
	if !ok {
		return nil
	}
	if b, err := strconv.ParseInt(bs, 10, 64); err != nil || b != base {
		return nil
	}
	var out []int64
	for f := range strings.SplitSeq(list, ",") {
		d, err := strconv.ParseInt(f, 10, 64)
		if err != nil || d < 0 {
			return nil
		}
		out = append(out, base+d)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// skipList is the offsets of one claim that a previous owner finished
// above the committed offset it gave the partition up at (ascending,
// immutable).
type skipList []int64

// has reports whether off is one of them.
func (s skipList) has(off int64) bool {
	_, ok := slices.BinarySearch(s, off)
	return ok
}

// from returns those >= off.
func (s skipList) from(off int64) []int64 {
	i, _ := slices.BinarySearch(s, off)
	return s[i:]
}

// merged returns the union of ascending a and b, ascending.
func merged(a, b []int64) []int64 {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := append(append(make([]int64, 0, len(a)+len(b)), a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// tp names one partition.
type tp struct {
	topic     string
	partition int32
}

// fetchDone reads the committed offsets and metadata of the session's
// claims, and returns the offsets a previous owner finished above each
// commit, keyed by partition, with the committed offset they hold for.
// A failure is logged and reads as none (the messages are delivered
// again).
func (s *Source) fetchDone(client sarama.Client, claims map[string][]int32) map[tp]doneAt {
	if client == nil || len(claims) == 0 {
		return nil
	}
	b, err := client.Coordinator(s.cfg.Group)
	if err == nil {
		var resp *sarama.OffsetFetchResponse
		resp, err = b.FetchOffset(sarama.NewOffsetFetchRequest(s.sc.Version, s.cfg.Group, claims))
		if err == nil {
			out := map[tp]doneAt{}
			for topic, ps := range claims {
				for _, p := range ps {
					blk := resp.GetBlock(topic, p)
					if blk == nil || blk.Err != sarama.ErrNoError || blk.Offset < 0 {
						continue
					}
					if d := parseDone(blk.Metadata, blk.Offset); len(d) > 0 {
						out[tp{topic, p}] = doneAt{base: blk.Offset, done: d}
					}
				}
			}
			return out
		}
	}
	s.cfg.Logger.Warn("kafka: reading the committed offsets' metadata; messages finished above a gap by the previous owner are delivered again",
		"group", s.cfg.Group, "err", err)
	return nil
}

// doneAt is a partition's skip list and the committed offset it is for.
type doneAt struct {
	base int64
	done skipList
}
