package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/core/run"
	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// varFlags are the variable options every pipeline command takes.
type varFlags struct {
	vars     []string
	varFiles []string
}

func (v *varFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&v.vars, "var", nil, "set a variable: -var name=value (repeatable)")
	cmd.Flags().StringArrayVar(&v.varFiles, "var-file", nil, "read variables from an HCL file (repeatable)")
}

// loaded is a pipeline decoded against the host's schemas.
type loaded struct {
	p *pipeline.Pipeline
	h *host.Host
}

// load parses and decodes a pipeline, printing diagnostics.
func (a *app) load(path string, vf varFlags, h *host.Host) (*pipeline.Pipeline, error) {
	p, diags := pipeline.Load(path, pipeline.Options{Vars: vf.vars, VarFiles: vf.varFiles, Environ: os.Environ()})
	a.noteSecrets(p)
	defer a.noteSecrets(p) // the decoded stages' sensitive attributes
	if !diags.HasErrors() {
		h.SetPins(p.PinnedDigests())
		diags = append(diags, lockDiags(path, p, h)...)
	}
	if !diags.HasErrors() {
		diags = append(diags, p.Decode(h)...)
	}
	if len(diags) > 0 {
		a.printDiags(p, diags)
	}
	if diags.HasErrors() {
		return nil, reported(exitBadConfig, diags)
	}
	return p, nil
}

func (a *app) printDiags(p *pipeline.Pipeline, diags hcl.Diagnostics) {
	var files map[string]*hcl.File
	if p != nil {
		files = p.Files
	}
	color := false
	if f, ok := terminalFile(a.stderr); ok {
		color = isatty.IsTerminal(f.Fd())
	}
	w := hcl.NewDiagnosticTextWriter(a.stderr, files, 100, color)
	w.WriteDiagnostics(diags)
}

// stageDiag turns an error from a stage into a diagnostic at the right line
// when the error names an attribute, and prints it.
func (a *app) reportStageError(p *pipeline.Pipeline, err error) error {
	var se *plan.StageError
	if !errors.As(err, &se) {
		return err
	}
	var ce *plugin.ConfigError
	if errors.As(se.Err, &ce) {
		rng := se.Stage.AttrRange(ce.Attribute)
		summary := "Invalid configuration"
		if ce.Attribute != "" {
			summary = fmt.Sprintf("Invalid value for %s", ce.Attribute)
		}
		a.printDiags(p, hcl.Diagnostics{{
			Severity: hcl.DiagError, Summary: summary,
			Detail: fmt.Sprintf("%s: %s", se.Stage.Addr(), ce.Msg), Subject: &rng,
		}})
		return reported(exitBadConfig, err)
	}
	return err
}

func (a *app) validateCommand() *cobra.Command {
	var vf varFlags
	cmd := &cobra.Command{
		Use:   "validate PIPELINE",
		Short: "Check a pipeline's syntax, schemas and references without reading any checkpoint",
		Example: `  sluice validate pipelines/quickstart
  sluice validate pipeline.hcl -var model_dir=/models/llama`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h := host.New(host.Options{Builtins: builtins, InProcess: true, PluginPath: host.SearchPath(os.Getenv(host.PluginPathEnv))})
			defer h.Close()
			p, err := a.load(args[0], vf, h)
			if err != nil {
				return err
			}
			if a.json {
				return writeJSON(a.stdout, map[string]any{"valid": true, "stages": len(p.Stages), "digest": p.Digest})
			}
			if !a.quiet {
				fmt.Fprintf(a.stdout, "The pipeline is valid: %d stages.\n", len(p.Stages))
			}
			return nil
		},
	}
	vf.add(cmd)
	return cmd
}

// prepared is a pipeline with its stages opened and planned.
type prepared struct {
	p     *pipeline.Pipeline
	h     *host.Host
	sess  *run.Session
	pl    *plan.Plan
	heap  uint64
	arena *plugin.Arena
	// noFsync renames the outputs into place without syncing them.
	noFsync bool
	// keepCache leaves the outputs' pages in the page cache.
	keepCache bool
}

func (pr *prepared) close() {
	if pr.sess != nil {
		pr.sess.Close()
	}
	pr.h.Close()
	if pr.arena != nil {
		pr.arena.Close()
	}
}

func (a *app) prepare(ctx context.Context, path string, vf varFlags) (*prepared, error) {
	h, arena, heap, err := a.newHost()
	if err != nil {
		return nil, err
	}
	pr := &prepared{h: h, arena: arena, heap: heap}
	p, err := a.load(path, vf, h)
	if err != nil {
		pr.close()
		return nil, err
	}
	pr.p = p
	pr.sess, err = run.Open(ctx, p, h)
	if err != nil {
		pr.close()
		return nil, a.reportStageError(p, err)
	}
	pr.pl, err = pr.sess.Plan(ctx)
	if err != nil {
		pr.close()
		return nil, a.reportStageError(p, err)
	}
	return pr, nil
}

func (a *app) planCommand() *cobra.Command {
	var vf varFlags
	cmd := &cobra.Command{
		Use:   "plan PIPELINE",
		Short: "Show what a run would do, tensor by tensor, without writing anything",
		Long: `plan reads only headers: every source describes its checkpoint, every
transform and sink decides what happens to each tensor (for example
"bf16 → q8_0" or "kept f32: 1-D"), and the output files and their sizes are
listed. Nothing is written.`,
		Example: `  sluice plan pipelines/quickstart
  sluice plan pipeline.hcl --json > plan.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pr, err := a.prepare(cmd.Context(), args[0], vf)
			if err != nil {
				return err
			}
			defer pr.close()
			if a.json {
				return writeJSON(a.stdout, planJSON(pr.pl))
			}
			printPlan(a.stdout, pr.pl)
			return nil
		},
	}
	vf.add(cmd)
	return cmd
}

func (a *app) runCommand() *cobra.Command {
	var vf varFlags
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "run PIPELINE",
		Short: "Run a pipeline: read, transform and write checkpoints",
		Long: `run plans the pipeline, streams every tensor through its transforms to its
sinks in parallel within --max-memory, and commits every output at the end.
Outputs are written under temporary names and renamed only when the whole
run succeeded; on any failure, or on Ctrl-C, every output is removed.

Beside each sink's outputs it writes a run manifest, NAME.sluice-run.json
(NAME: the sink's path), recording the pipeline's digest and variables
(sensitive ones redacted), every input's and output's size and SHA-256, the
plugins' versions and binary digests, and the times. --skip-unchanged reads
them to do nothing when nothing changed; --partition runs a share of the work
for a run spread over machines (see docs/distributed.md).`,
		Example: `  sluice run pipelines/quickstart
  sluice run pipeline.hcl -var-file prod.sluicevars.hcl --max-memory 1GiB
  sluice run pipelines/nightly-requant --skip-unchanged      # hourly from cron: free when nothing changed
  sluice run pipeline.hcl --partition $JOB_COMPLETION_INDEX/8  # then: sluice finalize pipeline.hcl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRecorded(cmd.Context(), args[0], vf, rf)
		},
	}
	vf.add(cmd)
	rf.add(cmd)
	return cmd
}

func (a *app) runPipeline(ctx context.Context, path string, vf varFlags) error {
	pr, err := a.prepare(ctx, path, vf)
	if err != nil {
		return err
	}
	defer pr.close()
	return a.execute(ctx, pr)
}

func (a *app) execute(ctx context.Context, pr *prepared) error {
	res, err := a.runPlan(ctx, pr, pr.pl)
	if err != nil {
		return err
	}
	if a.json {
		return writeJSON(a.stdout, resultJSON(res))
	}
	if !a.quiet {
		for _, sa := range res.Artifacts {
			for _, art := range sa.Artifacts {
				fmt.Fprintf(a.stdout, "wrote %s (%s) [%s]\n", art.Path, bytesize.Human(art.Size), sa.Stage.Addr())
			}
		}
	}
	return nil
}

// runPlan executes pl (pr's plan or a part of it) with pr's arena, heap
// budget and sources, showing progress; a failure comes back reported.
func (a *app) runPlan(ctx context.Context, pr *prepared, pl *plan.Plan) (*run.Result, error) {
	prog := a.newProgress()
	res, err := run.Execute(ctx, pl, run.Options{
		Arena:      pr.arena,
		HeapBudget: pr.heap,
		Workers:    a.workerCount(),
		Sources:    pr.sess.Env.Sources,
		Progress:   prog,
		NoFsync:    pr.noFsync,
		KeepCache:  pr.keepCache,
	})
	prog.finish(err == nil)
	if err != nil {
		return nil, a.reportStageError(pr.p, err)
	}
	return res, nil
}

func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func oneLine(err error) string {
	var ce *plugin.CrashError
	if errors.As(err, &ce) {
		return err.Error()
	}
	return strings.TrimSpace(err.Error())
}

// hintFor suggests a next step for common failures. An error may carry its
// own hint (a Hint() string method).
func hintFor(err error) string {
	var ce *plugin.CrashError
	var hinted interface{ Hint() string }
	switch {
	case errors.As(err, &hinted) && hinted.Hint() != "":
		return hinted.Hint()
	case errors.As(err, &ce):
		return "the plugin process died; rerun with --in-process to get a stack trace in this process"
	}
	return ""
}

func sortedStrings(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
