package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
)

// Kind is the kind of a stage.
type Kind int

// Stage kinds.
const (
	Source Kind = iota + 1
	Transform
	Sink
)

func (k Kind) String() string {
	switch k {
	case Source:
		return "source"
	case Transform:
		return "transform"
	case Sink:
		return "sink"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Pipeline is a decoded pipeline.
type Pipeline struct {
	// Dir is the directory the pipeline files live in (path.root).
	Dir string
	// Files are the parsed files, for printing diagnostics with snippets.
	Files map[string]*hcl.File
	// Variables are the declared variables with their final values.
	Variables []*Variable
	// Stages are in dependency order: every stage after its input.
	Stages []*Stage
	// EvalContext evaluates expressions in stage bodies.
	EvalContext *hcl.EvalContext
	// Digest is the SHA-256 of the pipeline files' bytes, in name order.
	Digest string
	// Plugins holds the plugin pins of the sluice block, by plugin name.
	Plugins map[string]PluginPin
}

// PluginPin pins a third-party plugin binary to a digest: a binary that does
// not match is not started.
type PluginPin struct {
	Name string
	// SHA256 is the hex digest the binary must have.
	SHA256 string
	Range  hcl.Range
}

// Stage is one source, transform or sink block.
type Stage struct {
	Kind Kind
	// Type is the first label: "safetensors", "quantize".
	Type string
	// Name is the second label.
	Name string
	// Input is the stage this one reads from; nil for a source.
	Input *Stage
	// InputRange is where the input reference is written.
	InputRange hcl.Range
	// Enabled is false when enabled = false, or when the input is disabled.
	Enabled bool
	// Body is the block's body without the core's meta-arguments.
	Body hcl.Body
	// DeclRange is the block header's range.
	DeclRange hcl.Range
	// Config is the body decoded against the stage type's spec (set by Decode).
	Config cty.Value
	// Sensitive lists attributes whose values must never be shown.
	Sensitive map[string]bool
	// Consumers are the stages that read from this one.
	Consumers []*Stage

	inputExpr hcl.Expression
}

// Addr returns the stage's address, e.g. "source.hf".
func (s *Stage) Addr() string { return s.Kind.String() + "." + s.Name }

// Stage returns the stage with the given address.
func (p *Pipeline) Stage(addr string) (*Stage, bool) {
	for _, s := range p.Stages {
		if s.Addr() == addr {
			return s, true
		}
	}
	return nil, false
}

// Options carry the variable values given outside the pipeline files.
type Options struct {
	// Vars are -var name=value settings, applied last.
	Vars []string
	// VarFiles are -var-file paths, applied in order after the environment.
	VarFiles []string
	// Environ is the process environment; SLUICE_VAR_name sets variable name.
	Environ []string
}

// EnvPrefix starts environment variables that set pipeline variables.
const EnvPrefix = "SLUICE_VAR_"

// ParseFiles reads a pipeline from a file, or from every *.hcl file of a
// directory.
func ParseFiles(path string) (*hclparse.Parser, []*hcl.File, string, hcl.Diagnostics) {
	parser := hclparse.NewParser()
	fi, err := os.Stat(path)
	if err != nil {
		return parser, nil, "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read pipeline",
			Detail:   err.Error(),
		}}
	}
	var names []string
	dir := path
	if fi.IsDir() {
		matches, _ := filepath.Glob(filepath.Join(path, "*.hcl"))
		for _, m := range matches {
			// Variable files and hidden files (the plugin lock file,
			// .sluice.lock.hcl) are not pipeline files.
			if !strings.HasSuffix(m, ".sluicevars.hcl") && !strings.HasPrefix(filepath.Base(m), ".") {
				names = append(names, m)
			}
		}
		sort.Strings(names)
		if len(names) == 0 {
			return parser, nil, dir, hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "No pipeline files",
				Detail:   fmt.Sprintf("The directory %s holds no *.hcl files.", path),
			}}
		}
	} else {
		names = []string{path}
		dir = filepath.Dir(path)
	}
	var files []*hcl.File
	var diags hcl.Diagnostics
	for _, n := range names {
		f, d := parser.ParseHCLFile(n)
		diags = append(diags, d...)
		if f != nil {
			files = append(files, f)
		}
	}
	return parser, files, dir, diags
}
