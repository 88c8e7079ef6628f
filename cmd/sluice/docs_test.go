package main

import (
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func testRoot() *cobra.Command {
	return (&app{stdout: io.Discard, stderr: io.Discard}).rootCommand()
}

// TestCLIReferenceIsCurrent fails when docs/cli/ no longer matches the
// command tree; `go generate ./cmd/sluice` (or go test -run
// TestCLIReferenceIsCurrent -update) rewrites it.
func TestCLIReferenceIsCurrent(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "docs", "cli")
	if *update {
		if err := writeReference(testRoot(), dir); err != nil {
			t.Fatal(err)
		}
		return
	}
	pages := referencePages(testRoot())
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("docs/cli/%s is missing: run go generate ./cmd/sluice", name)
			continue
		}
		if string(got) != string(want)+"\n" {
			t.Errorf("docs/cli/%s is stale: run go generate ./cmd/sluice\n%s", name, lineDiff(string(got), string(want)+"\n"))
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for _, f := range files {
		if _, ok := pages[filepath.Base(f)]; !ok {
			t.Errorf("docs/cli/%s documents no command: run go generate ./cmd/sluice", filepath.Base(f))
		}
	}
}

// TestEveryCommandHasHelpWithExamples runs --help on every command.
func TestEveryCommandHasHelpWithExamples(t *testing.T) {
	root := testRoot()
	root.InitDefaultCompletionCmd()
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		if c.Runnable() && !strings.HasPrefix(strings.Join(path, " "), "completion") {
			paths = append(paths, path)
			if c.Example == "" {
				t.Errorf("sluice %s has no examples", strings.Join(path, " "))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(root, nil)
	if len(paths) < 12 {
		t.Fatalf("only %d commands found", len(paths))
	}
	for _, p := range paths {
		out, _ := sluiceCode(t, exitOK, append(p, "--help")...)
		if !strings.Contains(out, "Usage:") || !strings.Contains(out, "Examples:") && len(p) > 0 {
			t.Errorf("sluice %s --help:\n%s", strings.Join(p, " "), out)
		}
	}
}

func TestShellCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_sluice", "zsh": "#compdef sluice", "fish": "complete -c sluice", "powershell": "Register-ArgumentCompleter"} {
		out, _ := sluiceCode(t, exitOK, "completion", shell)
		if !strings.Contains(out, want) {
			t.Errorf("completion %s lacks %q", shell, want)
		}
	}
	out, _ := sluiceCode(t, exitOK, "__complete", "convert", "a", "b", "--dtype", "")
	for _, want := range []string{"q4_0", "q8_0", "int8", "f16"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("--dtype completion lacks %s:\n%s", want, out)
		}
	}
	out, _ = sluiceCode(t, exitOK, "__complete", "convert", "a", "b", "--format", "")
	if !strings.Contains(out, "gguf\n") || !strings.Contains(out, "apsim\n") {
		t.Errorf("--format completion:\n%s", out)
	}
}

func TestPluginsList(t *testing.T) {
	out, _ := sluiceCode(t, exitOK, "plugins", "list")
	for _, b := range builtins {
		p := b.New()
		if !strings.Contains(out, p.Name) || !strings.Contains(out, p.Version) {
			t.Errorf("plugins list lacks %s %s:\n%s", p.Name, p.Version, out)
		}
	}
	if !strings.Contains(out, "PROTOCOL") || !strings.Contains(out, "1.") || !strings.Contains(out, ".gguf") {
		t.Errorf("plugins list lacks the protocol or file suffixes:\n%s", out)
	}
	var rows []pluginRow
	js, _ := sluiceCode(t, exitOK, "plugins", "list", "--json")
	decodeJSON(t, js, &rows)
	got := map[string]pluginRow{}
	for _, r := range rows {
		got[r.Name] = r
	}
	var names []string
	for _, b := range builtins {
		names = append(names, b.Name)
		r, ok := got[b.Name]
		if !ok || r.Kind != "built-in" || r.Protocol == "" {
			t.Errorf("%s: %+v", b.Name, r)
		}
	}
	sort.Strings(names)
	if g := got["gguf"]; len(g.Sources) != 1 || g.Sources[0].Doc == "" || len(g.Sinks) != 1 || strings.Join(g.Sinks[0].Extensions, ",") != ".gguf" {
		t.Errorf("gguf row: %+v", g)
	}
}
