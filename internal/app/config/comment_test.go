package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommentCutWarns: YAML ends an unquoted value at " #", so
// `password: hunter2 #tail` sets "hunter2". That rule stays, but the
// value a comment may have cut is warned about, with its line and the fix
// (quote it), and a secret's text never appears in the warning.
func TestCommentCutWarns(t *testing.T) {
	for _, tc := range []struct {
		name, add string
		path      string
		line      int
		want      string // "" = no warning
	}{
		{"secret", "    auth:\n      user: u\n      password: hunter2 #tail\n", "source.nats.auth.password", 7, "quote the whole value"},
		{"secret with spaced comment", "    auth:\n      token: s3cr3t   # rotated monthly\n", "source.nats.auth.token", 6, "quote the whole value"},
		{"secret from one variable", "    auth:\n      token: ${TOKEN} # from the vault\n", "", 0, ""},
		{"secret quoted", "    auth:\n      user: u\n      password: 'hunter2 #tail'\n", "", 0, ""},
		{"string glued", "    consumer: EVENTS #prod\n", "source.nats.consumer", 5, `"#prod" is a comment`},
		{"string explained", "    consumer: pacer   # shared by every worker\n", "", 0, ""},
		{"string quoted", "    consumer: \"EVENTS #prod\"\n", "", 0, ""},
		{"string with # inside", "    consumer: a#b\n", "", 0, ""},
		{"list item glued", "    url: nats://a:4222 #b\n", "source.nats.url", 5, `"#b" is a comment`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, strings.Replace(minimal, "    stream: ORDERS\n", "    stream: ORDERS\n"+tc.add, 1), map[string]string{"TOKEN": "x #y"})
			var got Problems
			for _, w := range c.Warnings() {
				if strings.Contains(w.Msg, "comment") {
					got = append(got, w)
				}
			}
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("warnings %q, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Path != tc.path || got[0].Line != tc.line || !strings.Contains(got[0].Msg, tc.want) {
				t.Fatalf("warnings %q, want one for %s on line %d saying %q", got, tc.path, tc.line, tc.want)
			}
			for _, leak := range []string{"hunter2", "tail", "s3cr3t", "rotated"} {
				if strings.HasPrefix(tc.path, "source.nats.auth") && strings.Contains(got[0].String(), leak) {
					t.Errorf("warning %q shows the secret's text %q", got[0], leak)
				}
			}
		})
	}
	// The shipped examples' comments are explanations: no warning.
	files, _ := filepath.Glob("../../../configs/*.yaml")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := Parse(data, env(nil))
		for _, w := range c.Warnings() {
			if strings.Contains(w.Msg, "comment") {
				t.Errorf("%s: %s", f, w)
			}
		}
	}
}
