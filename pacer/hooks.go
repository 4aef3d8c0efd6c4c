package pacer

import (
	"context"
	"time"
)

// Hook is any value implementing one or more of the Hook* interfaces below.
// The engine checks once, in New, which ones each hook implements, and calls
// only those: a hook pays only for what it observes. Hook methods are called
// from engine goroutines concurrently and must be fast and non-blocking.
// (The shape follows franz-go's kgo hooks; pacer/metrics implements them on
// a Prometheus registry.)
type Hook any

// Hooks is the list of hooks an Engine calls.
type Hooks []Hook

// HookConsumed is called when the source hands over a message, before the
// engine queues it: every later hook call for the message comes after it.
type HookConsumed interface{ OnConsumed(m *Message) }

// HookAdmitted is called when the shaper admits n messages (one delivery)
// after waiting wait since they were first asked for.
type HookAdmitted interface {
	OnAdmitted(n int, wait time.Duration)
}

// HookDelivered is called after each Deliver call with the per-outcome
// counts, the call's latency as the engine measured it and the feedback.
type HookDelivered interface {
	OnDelivered(delivered, retry, reject int, latency time.Duration, fb Feedback)
}

// HookRetry is called when a message is scheduled for another attempt.
type HookRetry interface {
	OnRetry(m *Message, delay time.Duration, err error)
}

// HookDeadLetter is called after a dead-letter write; err is its error.
type HookDeadLetter interface {
	OnDeadLetter(m *Message, reason error, err error)
}

// HookDeliver is called around each delivery attempt (one Sink.Deliver
// call), on the goroutine that makes it. BeforeDeliver gets the context the
// sink is about to get, the attempt's messages (their Attempt already
// counts this one) and how long they waited for admission; it returns the
// context the sink gets instead: ctx itself, or one derived from it (a
// tracer adds its span, which the sink propagates downstream). Hooks run in
// order, each given the previous one's context. AfterDeliver gets the last
// context and the results, before the engine acts on them. Neither may keep
// msgs or results after returning (the engine reuses them). An engine with
// no HookDeliver pays nothing for this.
type HookDeliver interface {
	BeforeDeliver(ctx context.Context, msgs []*Message, wait time.Duration) context.Context
	AfterDeliver(ctx context.Context, msgs []*Message, results []Result)
}

// HookDeadLetterStart is called before a dead-letter write with the context
// the DeadLetterer is about to get; it returns the context it gets instead
// (as HookDeliver's BeforeDeliver does). HookDeadLetter follows the write.
type HookDeadLetterStart interface {
	BeforeDeadLetter(ctx context.Context, m *Message, reason error) context.Context
}

// HookSettled is called when a message is settled with its source.
type HookSettled interface {
	OnSettled(m *Message, s Settlement)
}

// HookPaused is called when the source is paused or resumed; reasons is the
// set of reasons still in force.
type HookPaused interface {
	OnPaused(paused bool, reasons PauseReason)
}

// HookRate is called when the shaping rate changes (adaptive controller,
// rate-limit headers, SetRate, Reload). Rates are events per second.
type HookRate interface {
	OnRateChange(from, to float64, cause string)
}

// HookStatus receives, once in New, a function returning a live Status
// snapshot, for gauges read at scrape time (queue depth, in flight, paused,
// current rate, tokens).
type HookStatus interface {
	ObserveStatus(status func() Status)
}

// Settlement is how a message was settled with its source.
type Settlement uint8

const (
	// SettledAck: delivered; acked.
	SettledAck Settlement = iota + 1
	// SettledTerm: dead-lettered, then terminated.
	SettledTerm
	// SettledNak: given back for redelivery (stop, or a failed dead-letter write).
	SettledNak
	// SettledDeferred: republished to the fairness overflow
	// (Fairness.Defer), then acked; its copy comes back as a new message.
	SettledDeferred
)

func (s Settlement) String() string {
	switch s {
	case SettledAck:
		return "ack"
	case SettledTerm:
		return "term"
	case SettledNak:
		return "nak"
	case SettledDeferred:
		return "deferred"
	}
	return "unknown"
}

type hookSet struct {
	consumed   []HookConsumed
	admitted   []HookAdmitted
	delivered  []HookDelivered
	retry      []HookRetry
	deadLetter []HookDeadLetter
	dlStart    []HookDeadLetterStart
	deliver    []HookDeliver
	settled    []HookSettled
	paused     []HookPaused
	rate       []HookRate
}

func newHookSet(hs Hooks, status func() Status) hookSet {
	s := hookSet{
		consumed:   hooksOf[HookConsumed](hs),
		admitted:   hooksOf[HookAdmitted](hs),
		delivered:  hooksOf[HookDelivered](hs),
		retry:      hooksOf[HookRetry](hs),
		deadLetter: hooksOf[HookDeadLetter](hs),
		dlStart:    hooksOf[HookDeadLetterStart](hs),
		deliver:    hooksOf[HookDeliver](hs),
		settled:    hooksOf[HookSettled](hs),
		paused:     hooksOf[HookPaused](hs),
		rate:       hooksOf[HookRate](hs),
	}
	for _, h := range hs {
		if x, ok := h.(HookStatus); ok {
			x.ObserveStatus(status)
		}
	}
	return s
}

// hooksOf returns the hooks of hs that implement T, in order.
func hooksOf[T any](hs Hooks) []T {
	var out []T
	for _, h := range hs {
		if x, ok := h.(T); ok {
			out = append(out, x)
		}
	}
	return out
}
