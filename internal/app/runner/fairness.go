package runner

import (
	"errors"
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/algorithms/redislimit"
	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/kafkasource"
)

// fairness maps shaping.fairness to the engine's (nil when disabled).
func fairness(s config.Shaping) *pacer.Fairness {
	f := s.Fairness
	if !f.Enabled {
		return nil
	}
	keyOf := keyFunc(f.Key)
	if keyOf == nil {
		keyOf = func(m *pacer.Message) []byte { return m.Key }
	}
	return &pacer.Fairness{KeyOf: keyOf, Weights: f.Weights, MaxShare: f.MaxShare,
		MaxDeferring: f.MaxDeferring, MaxDeferringBytes: int64(f.MaxDeferringBytes)}
}

// priority maps shaping.priority to the engine's lanes (nil without lanes):
// a message's lane is named by its header, else chosen by its topic, else
// the default lane.
func priority(s config.Shaping) *pacer.Priority {
	p := s.Priority
	if len(p.Lanes) == 0 {
		return nil
	}
	byName := map[string]int{}
	byTopic := map[string]int{}
	floors := make([]float64, len(p.Lanes))
	for i, l := range p.Lanes {
		byName[l.Name] = i
		floors[i] = l.Floor
		for _, t := range l.Topics {
			byTopic[t] = i
		}
	}
	def := len(p.Lanes) - 1
	if i, ok := byName[p.Default]; ok {
		def = i
	}
	header := p.Header
	return &pacer.Priority{
		Lanes:  len(p.Lanes),
		Floors: floors,
		LaneOf: func(m *pacer.Message) int {
			if header != "" {
				if v, ok := m.Headers[header]; ok {
					if i, ok := byName[v]; ok {
						return i
					}
				}
			}
			if i, ok := byTopic[m.Topic]; ok {
				return i
			}
			return def
		},
	}
}

// withOverflow connects the Kafka deferral producer of
// shaping.fairness.overflow, if set, and gives the engine's fairness its
// Defer and Deferred (kafkaSourceConfig adds the topic to the consumed ones).
func withOverflow(cfg *config.Config, ec *pacer.Config, cl *closers) error {
	o := cfg.Shaping.Fairness.Overflow
	if o == "" || ec.Fairness == nil || cfg.Source.Type != "kafka" {
		return nil
	}
	d, err := kafkasource.NewDeferral(kafkasource.DeferralConfig{Client: kafkaClient(cfg.Source.Kafka), Topic: o})
	if err != nil {
		return fmt.Errorf("shaping.fairness.overflow: %w", err)
	}
	cl.add(d.Close)
	f := *ec.Fairness
	f.Defer, f.Deferred = d.Defer, d.Deferred
	ec.Fairness = &f
	return nil
}

// CheckBrokers checks what only the brokers can tell, asking them with
// each connection bounded by timeout: that shaping.fairness.overflow's
// topic exists (run refuses to start without it). A missing topic is a
// problem on its field's line; a check the brokers did not answer is
// returned in unchecked, saying so, for validate to print: validate may
// run where the brokers cannot be reached. It creates nothing.
func CheckBrokers(cfg *config.Config, timeout time.Duration) (ps config.Problems, unchecked []string) {
	o := cfg.Shaping.Fairness.Overflow
	if o == "" || !cfg.Shaping.Fairness.Enabled || cfg.Source.Type != "kafka" {
		return nil, nil
	}
	err := kafkasource.CheckDeferralTopic(kafkasource.DeferralConfig{Client: kafkaClient(cfg.Source.Kafka), Topic: o}, timeout)
	switch {
	case err == nil:
	case unreachable(err) || !errors.Is(err, kafkasource.ErrNoTopic):
		unchecked = append(unchecked, fmt.Sprintf("shaping.fairness.overflow: topic %q not checked: %s", o, cfg.Redact(err.Error())))
	default:
		pos := cfg.Where("shaping.fairness.overflow")
		ps = append(ps, config.Problem{Path: "shaping.fairness.overflow", Line: pos.Line, Column: pos.Column, Msg: cfg.Redact(err.Error())})
	}
	return ps, unchecked
}

// withLanes shares the Redis budget by shaping.priority's lanes (higher
// lanes first, floors kept across workers), when lanes are configured.
func withLanes(c redislimit.Config, p config.Priority) redislimit.Config {
	if len(p.Lanes) < 2 {
		return c
	}
	c.Lanes = len(p.Lanes)
	c.Floors = make([]float64, len(p.Lanes))
	for i, l := range p.Lanes {
		c.Floors[i] = l.Floor
	}
	return c
}
