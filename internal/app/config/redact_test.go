package config

import (
	"errors"
	"strings"
	"testing"
)

// TestProblemLinesHideSecrets: validate and run print the file's line next
// to each problem; a line holding a secret (a password, token, DSN, Redis
// URL, header value, URL credentials or query values, literal or from the
// environment) never shows it, whether the file parsed or not.
func TestProblemLinesHideSecrets(t *testing.T) {
	text := `source:
  type: kafka
  kafka:
    brokers: [b:9092]
    topics: [t]
    sasl: {mechanism: PLAINX, username: u, password: kafkapw1}
shaping:
  rate: 10/s
  global:
    redis_url: http://:redispw2@r
    rate: 1/s
sink:
  type: http
  http:
    url: https://u:urlpw3@api.example/x?api_key=keypw4
    bearer_token: ${TOKEN}
    headers:
      X-Key: [hdrpw6]
      X-Other: hdrpw8
  sql:
    dsn: postgres://u:dsnpw7@db/x
  stdout:
    format: ${TOKEN}
`
	secrets := []string{"kafkapw1", "redispw2", "urlpw3", "keypw4", "envtok5", "hdrpw6", "dsnpw7", "hdrpw8"}
	c, err := Parse([]byte(text), env(map[string]string{"TOKEN": "envtok5"}))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) < 4 {
		t.Fatalf("Parse = %v, want several problems", err)
	}
	lines := strings.Split(text, "\n")
	var shown strings.Builder
	for _, p := range ps {
		shown.WriteString(p.String() + "\n")
		if p.Line > 0 {
			shown.WriteString(c.RedactLine(p.Line, lines[p.Line-1]) + "\n")
		}
	}
	// Every line of the file, as it would be shown for a problem on it,
	// from the parsed file and from the same file broken by a syntax
	// error on its last line (nothing could be decoded into fields).
	broken, err := Parse([]byte(text+"      X-Broken: \"unterminated\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "YAML syntax") {
		t.Fatalf("broken file: %v, want a syntax error", err)
	}
	for i, l := range lines {
		shown.WriteString(c.RedactLine(i+1, l) + "\n")
		shown.WriteString(broken.RedactLine(i+1, l) + "\n")
	}
	for _, s := range secrets {
		if strings.Contains(shown.String(), s) {
			t.Errorf("%s is shown:\n%s", s, shown.String())
		}
	}
}
