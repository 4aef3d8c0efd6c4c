package config

// Warnings returns settings that are valid but work against each other
// (one cancels what another promises) or can lose or strand messages, each
// with its path and line. A config with warnings runs; `pacer validate`
// prints them and `pacer run` logs them at start-up.
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
	if c.Source.Type == "nats" {
		if md := c.Source.NATS.MaxDeliver; !md.IsNone() {
			msg := "%d: the server discards a message after %d deliveries without a dead letter; " +
				"every stop or restart that hands a message back spends one (pacer's own retries do not), and pacer dead-letters a message held on its last delivery when it stops"
			if c.Retry.MaxAttempts.IsNone() || md < c.Retry.MaxAttempts {
				v.add("source.nats.max_deliver", msg+"; max_deliver %d is below retry.max_attempts %v, so the server can discard a message before pacer dead-letters it", md, md, md, c.Retry.MaxAttempts)
			} else {
				v.add("source.nats.max_deliver", msg, md, md)
			}
		}
	}
	v.probs = append(v.probs, c.hints...)
	v.probs.sort()
	return v.probs
}
