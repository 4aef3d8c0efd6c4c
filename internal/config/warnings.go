package config

// Warnings returns settings that are valid but work against each other
// (one cancels what another promises), each with its path and line. A
// config with warnings runs; validate prints them and run logs them.
func (c *Config) Warnings() Problems {
	v := validator{c: c}
	s := c.Shaping
	if s.Warmup > 0 && !s.Rate.IsZero() {
		// The warm-up limiter charges every permit at least 1/rate, warm or
		// cold (algorithms.WarmUp), so nothing ever goes faster than rate.
		if s.Burst > 1 {
			v.add("shaping.warmup", "warmup paces every message at the sustained rate %s, even once warm, so burst %d is never reached; drop warmup or burst", s.Rate, s.Burst)
		}
		if !s.Peak.IsZero() && s.Peak.PerSecond() > s.Rate.PerSecond() {
			v.add("shaping.warmup", "warmup paces every message at the sustained rate %s, even once warm, so peak %s is never reached; drop warmup or peak", s.Rate, s.Peak)
		}
	}
	v.probs.sort()
	return v.probs
}
