package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The markdown reference in docs/cli/ is generated from the command tree:
// one page per command, and README.md listing them. TestCLIReferenceIsCurrent
// fails when it is stale; regenerate it with
//
//go:generate go test -run TestCLIReferenceIsCurrent -update .

// referencePages renders the reference: file name → content.
func referencePages(root *cobra.Command) map[string][]byte {
	root.InitDefaultCompletionCmd()
	pages := map[string][]byte{}
	var all []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		all = append(all, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, c := range all {
		pages[pageName(c)] = commandPage(c)
	}
	var idx bytes.Buffer
	idx.WriteString("# Command reference\n\n")
	idx.WriteString("Generated from the command tree by `go generate ./cmd/sluice`; do not edit. ")
	idx.WriteString("[../cli.md](../cli.md) describes exit codes, output schemas and the environment.\n\n")
	idx.WriteString("| command | what it does |\n|---|---|\n")
	for _, c := range all {
		fmt.Fprintf(&idx, "| [`%s`](%s) | %s |\n", c.CommandPath(), pageName(c), escapeCell(c.Short))
	}
	pages["README.md"] = idx.Bytes()
	return pages
}

func pageName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

func escapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func commandPage(c *cobra.Command) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", c.CommandPath(), c.Short)
	b.WriteString("```\n" + c.UseLine() + "\n```\n\n")
	if c.Long != "" {
		b.WriteString(longText(c.Long) + "\n\n")
	}
	if c.Example != "" {
		b.WriteString("## Examples\n\n```\n" + strings.TrimRight(c.Example, "\n") + "\n```\n\n")
	}
	if fs := c.NonInheritedFlags(); fs.HasAvailableFlags() {
		b.WriteString("## Flags\n\n")
		flagTable(&b, fs)
	}
	if fs := c.InheritedFlags(); fs.HasAvailableFlags() {
		b.WriteString("## Global flags\n\n")
		flagTable(&b, fs)
	}
	var see []string
	if p := c.Parent(); p != nil {
		see = append(see, fmt.Sprintf("[`%s`](%s): %s", p.CommandPath(), pageName(p), p.Short))
	}
	subs := c.Commands()
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name() < subs[j].Name() })
	for _, s := range subs {
		if s.Hidden || s.Name() == "help" {
			continue
		}
		see = append(see, fmt.Sprintf("[`%s`](%s): %s", s.CommandPath(), pageName(s), s.Short))
	}
	if len(see) > 0 {
		b.WriteString("## See also\n\n")
		for _, s := range see {
			b.WriteString("- " + s + "\n")
		}
		b.WriteString("\n")
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// longText keeps indented blocks of a command's description as code blocks.
func longText(s string) string {
	var out []string
	in := false
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		indented := strings.HasPrefix(line, "  ")
		switch {
		case indented && !in:
			out = append(out, "```")
			in = true
		case !indented && in && line != "":
			out = append(out, "```")
			in = false
		case !indented && in && line == "":
			out = append(out, "```")
			in = false
		}
		out = append(out, line)
	}
	if in {
		out = append(out, "```")
	}
	return strings.Join(out, "\n")
}

func flagTable(b *bytes.Buffer, fs *pflag.FlagSet) {
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", " + name
		}
		if typ, _ := pflag.UnquoteUsage(f); typ != "" {
			name += " " + typ
		}
		def := f.DefValue
		switch def {
		case "", "[]", "false", "0":
			def = ""
		default:
			def = "`" + def + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", name, def, escapeCell(f.Usage))
	})
	b.WriteString("\n")
}

// writeReference writes the reference into dir, removing pages of commands
// that no longer exist.
func writeReference(root *cobra.Command, dir string) error {
	pages := referencePages(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for _, p := range old {
		if _, ok := pages[filepath.Base(p)]; !ok {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	for name, b := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}
