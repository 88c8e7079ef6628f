package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/cobra"
)

type fmtFlags struct {
	list, write, diff, check, recursive bool
}

func (a *app) fmtCommand() *cobra.Command {
	var ff fmtFlags
	cmd := &cobra.Command{
		Use:   "fmt [PATH…]",
		Short: "Rewrite pipeline files (*.hcl) in the canonical format",
		Long: `fmt rewrites pipeline and variable files (*.hcl) in the canonical HCL style:
indentation, alignment of equals signs, spacing. It works like terraform fmt.

Without arguments it formats the *.hcl files of the current directory; a PATH
may be a file or a directory, and "-" reads standard input and writes the
result to standard output. Files with syntax errors are reported with their
line and left alone.

  -list=true    print the name of each file whose formatting changed
  -write=true   write the result back to the file (off with -check or -)
  -diff         print a diff of the changes
  -check        change nothing; exit 3 when a file is not formatted
  -recursive    also format the files of subdirectories

Exit codes: 0 all files are (now) formatted; 2 a syntax error or bad path;
3 with -check, a file is not formatted.`,
		Example: `  sluice fmt
  sluice fmt pipelines/ -recursive
  sluice fmt -check -diff pipeline.hcl
  cat pipeline.hcl | sluice fmt -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if ff.check {
				ff.write = false
			}
			return a.runFmt(cmd.InOrStdin(), args, ff)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&ff.list, "list", true, "list files whose formatting differs")
	f.BoolVar(&ff.write, "write", true, "write the result to the source file instead of standard output")
	f.BoolVar(&ff.diff, "diff", false, "display diffs of formatting changes")
	f.BoolVar(&ff.check, "check", false, "check that the input is formatted; exit 3 when it is not (implies -write=false)")
	f.BoolVar(&ff.recursive, "recursive", false, "also process files in subdirectories")
	return cmd
}

func (a *app) runFmt(stdinR io.Reader, args []string, ff fmtFlags) error {
	if len(args) == 0 {
		args = []string{"."}
	}
	var files []string
	stdin := false
	for _, p := range args {
		if p == "-" {
			stdin = true
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return configErr(fmt.Errorf("fmt: %w", err))
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		found, err := hclFiles(p, ff.recursive)
		if err != nil {
			return configErr(err)
		}
		files = append(files, found...)
	}
	var unformatted, broken int
	if stdin {
		src, err := io.ReadAll(stdinR)
		if err != nil {
			return err
		}
		out, changed, err := a.formatOne("<stdin>", src)
		if err != nil {
			return reported(exitBadConfig, err)
		}
		if changed {
			unformatted++
		}
		if ff.diff && changed {
			writeUnifiedDiff(a.stdout, "<stdin>", src, out)
		}
		if !ff.check && !ff.diff {
			a.stdout.Write(out)
		}
	}
	for _, p := range files {
		src, err := os.ReadFile(p)
		if err != nil {
			return configErr(fmt.Errorf("fmt: %w", err))
		}
		out, changed, err := a.formatOne(p, src)
		if err != nil {
			broken++
			continue
		}
		if !changed {
			if !ff.write && !ff.check && !ff.list && !ff.diff {
				a.stdout.Write(out)
			}
			continue
		}
		unformatted++
		if ff.list {
			fmt.Fprintln(a.stdout, p)
		}
		if ff.write {
			if err := writeKeepingMode(p, out); err != nil {
				return err
			}
		} else if !ff.check && !ff.list && !ff.diff {
			a.stdout.Write(out)
		}
		if ff.diff {
			writeUnifiedDiff(a.stdout, p, src, out)
		}
	}
	switch {
	case broken > 0:
		return reported(exitBadConfig, fmt.Errorf("%d file(s) have syntax errors", broken))
	case ff.check && unformatted > 0:
		return reported(exitBadInput, fmt.Errorf("%d file(s) are not formatted", unformatted))
	}
	return nil
}

// formatOne checks the syntax of src and returns it formatted. Syntax errors
// are printed as diagnostics.
func (a *app) formatOne(name string, src []byte) ([]byte, bool, error) {
	f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		w := hcl.NewDiagnosticTextWriter(a.stderr, map[string]*hcl.File{name: f}, 100, false)
		w.WriteDiagnostics(diags)
		return nil, false, errors.New(diags.Error())
	}
	out := hclwrite.Format(src)
	return out, !bytes.Equal(out, src), nil
}

// hclFiles lists the *.hcl files of dir (and its subdirectories when
// recursive), skipping hidden directories.
func hclFiles(dir string, recursive bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && (!recursive || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".hcl") && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// writeKeepingMode replaces the file's content, keeping its permissions.
func writeKeepingMode(p string, b []byte) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".fmt-*")
	if err != nil {
		return fmt.Errorf("fmt: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("fmt: writing %s: %w", p, err)
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// writeUnifiedDiff prints a unified diff (3 lines of context) of two texts.
func writeUnifiedDiff(w io.Writer, name string, a, b []byte) {
	la, lb := splitLines(a), splitLines(b)
	ops := diffLines(la, lb)
	fmt.Fprintf(w, "--- old/%s\n+++ new/%s\n", name, name)
	const context = 3
	// Group the edit script into hunks.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run-end > 2*context || run == len(ops) {
				end = min(end+context, len(ops))
				break
			}
			end = run
		}
		oa, ob := ops[start].ai, ops[start].bi
		na, nb := 0, 0
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				na++
			}
			if op.kind != '-' {
				nb++
			}
		}
		fmt.Fprintf(w, "@@ -%d,%d +%d,%d @@\n", oa+1, na, ob+1, nb)
		for _, op := range ops[start:end] {
			fmt.Fprintf(w, "%c%s\n", op.kind, op.text)
		}
		i = end
	}
}

func splitLines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

type diffOp struct {
	kind   byte // ' ', '-', '+'
	text   string
	ai, bi int // line indexes in a and b where the op applies
}

// diffLines computes an edit script by the longest common subsequence,
// after trimming the common head and tail.
func diffLines(a, b []string) []diffOp {
	var ops []diffOp
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		ops = append(ops, diffOp{' ', a[pre], pre, pre})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(ma)*len(mb) > 4_000_000 {
		for i, s := range ma {
			ops = append(ops, diffOp{'-', s, pre + i, pre})
		}
		for j, s := range mb {
			ops = append(ops, diffOp{'+', s, pre + len(ma), pre + j})
		}
	} else {
		// lcs[i][j] is the LCS length of ma[i:] and mb[j:].
		lcs := make([][]int, len(ma)+1)
		for i := range lcs {
			lcs[i] = make([]int, len(mb)+1)
		}
		for i := len(ma) - 1; i >= 0; i-- {
			for j := len(mb) - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(ma) || j < len(mb) {
			switch {
			case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
				ops = append(ops, diffOp{' ', ma[i], pre + i, pre + j})
				i++
				j++
			case i < len(ma) && (j == len(mb) || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, diffOp{'-', ma[i], pre + i, pre + j})
				i++
			default:
				ops = append(ops, diffOp{'+', mb[j], pre + i, pre + j})
				j++
			}
		}
	}
	for k := 0; k < suf; k++ {
		ia, ib := len(a)-suf+k, len(b)-suf+k
		ops = append(ops, diffOp{' ', a[ia], ia, ib})
	}
	return ops
}
