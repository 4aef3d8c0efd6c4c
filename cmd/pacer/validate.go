package main

import (
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/internal/app/runner"
)

// brokerCheckTimeout bounds each connection of validate's broker checks.
const brokerCheckTimeout = 5 * time.Second

type validateCmd struct {
	configFlags
}

// Run prints every problem (exit 2), or "ok", the warnings (settings that
// cancel each other) and what the config will do. It builds every part as
// run does, offline, so a config that validates does not fail at start-up
// for its settings; then it asks the brokers, when they answer, what only
// they can tell (runner.CheckBrokers: the fairness overflow topic exists),
// and says what it could not check.
func (v validateCmd) Run(e *env) error {
	path, err := v.path(e)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(e, path)
	if err != nil {
		return err
	}
	ps, unchecked := runner.CheckBrokers(cfg, brokerCheckTimeout)
	if len(ps) > 0 {
		data, err := runner.ReadFile(path)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		printProblems(e.stderr, path, data, cfg, ps)
		return &exitError{code: exitUsage, err: fmt.Errorf("%s: %d problem(s)", path, len(ps))}
	}
	fmt.Fprintf(e.stdout, "ok: %s\n", path)
	for _, u := range unchecked {
		fmt.Fprintf(e.stdout, "%s: note: %s\n", path, u)
	}
	for _, w := range cfg.Warnings() {
		loc := path
		if w.Line > 0 {
			loc = fmt.Sprintf("%s:%d", path, w.Line)
		}
		fmt.Fprintf(e.stdout, "%s: warning: %s: %s\n", loc, w.Path, w.Msg)
	}
	fmt.Fprintf(e.stdout, "\n%s\n", wrap(cfg.Summary(), 78))
	return nil
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
