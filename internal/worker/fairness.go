package worker

import (
	"github.com/pacer-dev/pacer/internal/config"
	"github.com/pacer-dev/pacer/pacer"
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
	return &pacer.Fairness{KeyOf: keyOf, Weights: f.Weights, MaxShare: f.MaxShare}
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
