package natssource

import "testing"

// TermWithReason is silently ignored by servers before 2.10.4 (the message
// is redelivered); those must get a plain Term.
func TestTermReasonSupported(t *testing.T) {
	for _, tt := range []struct {
		version string
		want    bool
	}{
		{"2.9.10", false},
		{"2.10.3", false},
		{"2.10.4", true},
		{"2.10.22", true},
		{"2.11.0", true},
		{"2.15.2", true},
		{"3.0.0", true},
		{"1.9.9", false},
		{"", false},
		{"garbage", false},
	} {
		if got := termReasonSupported(tt.version); got != tt.want {
			t.Errorf("termReasonSupported(%q) = %v want %v", tt.version, got, tt.want)
		}
	}
}
