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

	"github.com/sluice-ml/sluice/internal/linediff"
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
			linediff.Unified(a.stdout, "<stdin>", src, out)
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
			linediff.Unified(a.stdout, p, src, out)
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
