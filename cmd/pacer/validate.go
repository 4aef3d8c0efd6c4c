package main

import (
	"fmt"
	"os"
)

type validateCmd struct {
	Config string `short:"c" required:"" type:"path" placeholder:"FILE" help:"Config file (YAML)."`
}

// Run prints every problem (exit 2), or "ok" and what the config will do.
func (v validateCmd) Run(e *env) error {
	cfg, err := loadConfig(e, v.Config)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "ok: %s\n\n%s\n", v.Config, wrap(cfg.Summary(), 78))
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(e.stdout, "\nwarning: %s\n", wrap(w, 78))
	}
	return nil
}

func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return data, nil
}

// wrap folds text at width columns on spaces.
func wrap(s string, width int) string {
	out := make([]byte, 0, len(s)+len(s)/width+1)
	col := 0
	word := []byte{}
	flush := func() {
		if len(word) == 0 {
			return
		}
		if col > 0 && col+1+len(word) > width {
			out = append(out, '\n')
			col = 0
		} else if col > 0 {
			out = append(out, ' ')
			col++
		}
		out = append(out, word...)
		col += len(word)
		word = word[:0]
	}
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			flush()
			continue
		}
		word = append(word, s[i])
	}
	flush()
	return string(out)
}
