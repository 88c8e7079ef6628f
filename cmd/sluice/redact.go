package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/core/pipeline"
)

// redactedText replaces a sensitive value in what the CLI prints.
const redactedText = "(sensitive value)"

// minSecretLen is the shortest value redacted: shorter ones would garble
// ordinary output and protect little.
const minSecretLen = 4

// secretSet holds the values of the run's sensitive inputs: sensitive
// variables (however they were set: -var, -var-file, SLUICE_VAR_…, a key
// file), sensitive attributes, signing keys.
type secretSet struct {
	mu     sync.Mutex
	values [][]byte
}

// add records a sensitive value.
func (s *secretSet) add(v string) {
	if len(v) < minSecretLen {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.values {
		if string(x) == v {
			return
		}
	}
	s.values = append(s.values, []byte(v))
}

// addValue records every string inside a cty value (unmarked).
func (s *secretSet) addValue(v cty.Value) {
	v, _ = v.UnmarkDeep()
	if !v.IsWhollyKnown() || v.IsNull() {
		return
	}
	switch {
	case v.Type() == cty.String:
		s.add(v.AsString())
	case v.CanIterateElements():
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			s.addValue(e)
		}
	}
}

func (s *secretSet) snapshot() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values
}

// redactor writes through to w with every sensitive value replaced. A write
// that ends with the beginning of a secret holds those bytes back until the
// next write (or Flush) shows whether the secret follows, so a secret split
// between two writes is still caught.
type redactor struct {
	w       io.Writer
	secrets *secretSet
	mu      sync.Mutex
	pending []byte
}

func newRedactor(w io.Writer, s *secretSet) *redactor { return &redactor{w: w, secrets: s} }

func (r *redactor) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	secrets := r.secrets.snapshot()
	if len(secrets) == 0 && len(r.pending) == 0 {
		return r.w.Write(p)
	}
	buf := append(r.pending, p...)
	for _, s := range secrets {
		buf = bytes.ReplaceAll(buf, s, []byte(redactedText))
	}
	hold := 0
	for _, s := range secrets {
		for n := min(len(s)-1, len(buf)); n > hold; n-- {
			if bytes.HasSuffix(buf, s[:n]) {
				hold = n
				break
			}
		}
	}
	r.pending = append([]byte(nil), buf[len(buf)-hold:]...)
	if _, err := r.w.Write(buf[:len(buf)-hold]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held back.
func (r *redactor) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) > 0 {
		r.w.Write(r.pending)
		r.pending = nil
	}
}

// terminalFile returns the file behind w, for terminal detection.
func terminalFile(w io.Writer) (*os.File, bool) {
	if r, ok := w.(*redactor); ok {
		w = r.w
	}
	f, ok := w.(*os.File)
	return f, ok
}

// noteSecrets records a pipeline's sensitive values: its sensitive
// variables, and the sensitive attributes of its stages (decoded or not).
func (a *app) noteSecrets(p *pipeline.Pipeline) {
	if a.secrets == nil || p == nil {
		return
	}
	for _, v := range p.Variables {
		if v.Sensitive {
			a.secrets.addValue(v.Value)
		}
	}
	for _, st := range p.Stages {
		cfg := st.Config
		if cfg.IsNull() || !cfg.IsKnown() || !cfg.Type().IsObjectType() {
			continue
		}
		for name := range st.Sensitive {
			if cfg.Type().HasAttribute(name) {
				a.secrets.addValue(cfg.GetAttr(name))
			}
		}
	}
}

// noteFlagSecrets records the keys given on the command line: --key, and
// the content of --key-file.
func (a *app) noteFlagSecrets(cmd *cobra.Command) {
	if a.secrets == nil {
		return
	}
	if f := cmd.Flags().Lookup("key"); f != nil && f.Value.Type() == "string" {
		a.secrets.add(f.Value.String())
	}
	if f := cmd.Flags().Lookup("key-file"); f != nil && f.Value.String() != "" {
		if b, err := os.ReadFile(f.Value.String()); err == nil && len(b) <= maxKeyFile {
			a.secrets.add(strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"))
		}
	}
}
