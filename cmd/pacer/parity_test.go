package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// parityBase is a valid config; each case below breaks one thing in it.
const parityBase = `source:
  type: nats
  nats:
    stream: ORDERS
shaping:
  rate: 100/s
admin:
  listen: ""
sink:
  type: http
  http:
    url: http://127.0.0.1:1/orders
`

// TestValidateAndRunAgree: every broken config is refused by validate and
// by run alike, with exit code 2 and the same problems on the same lines,
// before anything connects; secrets on the lines shown are redacted.
func TestValidateAndRunAgree(t *testing.T) {
	sqlBase := strings.Replace(parityBase, "  type: http\n  http:\n    url: http://127.0.0.1:1/orders\n", "  type: sql\n  sql:\n    driver: sqlite\n    dsn: file:x.db\n", 1)
	for _, tc := range []struct {
		name, text string
		line       int
		want       string
	}{
		{"header name with a space", parityBase + "    headers:\n      \"X Key\": v\n", 14, `header name "X Key" is not a valid token`},
		{"header value with a newline", parityBase + "    headers:\n      X-Key: \"a\\nb\"\n", 14, "value contains CR, LF or NUL"},
		{"broken body template", parityBase + "    body: \"{{ .Nope \"\n", 13, "unclosed action"},
		{"content_type with CR/LF", parityBase + "    content_type: \"a\\r\\nX-Evil: 1\"\n", 13, "content_type contains CR, LF or NUL"},
		{"bad idempotency header", parityBase + "    idempotency_header: \"Idem Key\"\n", 13, "not a valid header name"},
		{"bad gjson success_path", parityBase + "    success_path: \"data.#(ok==true\"\n", 13, "missing ')'"},
		{"missing CA file", parityBase + "    tls:\n      enabled: true\n      ca_file: /does/not/exist.pem\n", 13, "ca_file"},
		{"SQL table that is not an identifier", sqlBase + "    table: \"x; drop\"\n", 14, "only letters, digits and _"},
		{"burst beyond what the bucket can hold", strings.Replace(parityBase, "rate: 100/s", "rate: 100/s\n  burst: 9223372036854775807", 1), 7, "burst 9223372036854775807"},
		{"admin port out of range", strings.Replace(parityBase, `listen: ""`, "listen: 127.0.0.1:99999", 1), 8, "want a number from 1 to 65535"},
		{"NATS CA file missing", strings.Replace(parityBase, "stream: ORDERS", "stream: ORDERS\n    tls:\n      enabled: true\n      ca_file: /nope/ca.pem", 1), 5, "tls.ca_file"},
		{"Kafka client certificate missing", strings.Replace(parityBase, "  type: nats\n  nats:\n    stream: ORDERS\n", "  type: kafka\n  kafka:\n    brokers: [127.0.0.1:1]\n    topics: [t]\n    tls:\n      enabled: true\n      cert_file: /nope/c.pem\n      key_file: /nope/k.pem\n", 1), 6, "cert_file"},
		{"state_dir that cannot be made, reported at its own line", strings.Replace(parityBase, "rate: 100/s", "rate: 100/s\n  state_dir: /proc/pacer-no-such-dir", 1), 7, "shaping.state_dir: pacer: state dir"},
		{"URL password never shown", strings.Replace(parityBase, "http://127.0.0.1:1/orders", "ftp://u:hunter2secret@127.0.0.1/x?api_key=hunter2secret", 1), 12, "is not an http:// or https:// URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "pacer.yaml")
			if err := os.WriteFile(file, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			var got [2]string
			for i, args := range [][]string{{"validate", file}, {"run", "-c", file}} {
				var stdout, stderr bytes.Buffer
				ctx, cancel := context.WithCancel(context.Background())
				code := run(ctx, args, &stdout, &stderr, func(string) (string, bool) { return "", false })
				cancel()
				if code != exitUsage {
					t.Fatalf("pacer %s: exit %d want %d; stderr:\n%s", args[0], code, exitUsage, stderr.String())
				}
				got[i] = stderr.String()
				if want := file + ":" + strconv.Itoa(tc.line) + ": "; !strings.Contains(got[i], want) || !strings.Contains(got[i], tc.want) {
					t.Errorf("pacer %s: stderr lacks %q and %q:\n%s", args[0], want, tc.want, got[i])
				}
				if strings.Contains(got[i], "hunter2secret") {
					t.Errorf("pacer %s shows a secret:\n%s", args[0], got[i])
				}
			}
			if got[0] != got[1] {
				t.Errorf("validate and run report differently:\nvalidate:\n%s\nrun:\n%s", got[0], got[1])
			}
		})
	}
}
