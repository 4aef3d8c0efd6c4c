package config

import "fmt"

// Warnings returns what is valid but can lose or strand messages, for
// `pacer validate` to print and `pacer run` to log at start-up.
func (c *Config) Warnings() []string {
	var w []string
	if c.Source.Type == "nats" {
		if md := c.Source.NATS.MaxDeliver; md > 0 {
			s := fmt.Sprintf("source.nats.max_deliver: %d: the server discards a message after %d deliveries without a dead letter; "+
				"every stop or restart that hands a message back spends one (pacer's own retries do not), and pacer dead-letters a message held on its last delivery when it stops", md, md)
			if c.Retry.MaxAttempts == 0 || md < c.Retry.MaxAttempts {
				s += fmt.Sprintf("; max_deliver %d is below retry.max_attempts %d (0: forever), so the server can discard a message before pacer dead-letters it", md, c.Retry.MaxAttempts)
			}
			w = append(w, s)
		}
	}
	return w
}
