package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
)

var topSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "sluice"},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "source", LabelNames: []string{"type", "name"}},
		{Type: "transform", LabelNames: []string{"type", "name"}},
		{Type: "sink", LabelNames: []string{"type", "name"}},
	},
}

var metaSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "input"},
		{Name: "enabled"},
	},
}

// Load reads the pipeline at path (a file or a directory of *.hcl files),
// evaluates its variables and locals, and builds the stage graph. Stage
// bodies are decoded later by Decode, against the specs of their types.
func Load(path string, opts Options) (*Pipeline, hcl.Diagnostics) {
	parser, files, dir, diags := ParseFiles(path)
	return load(parser, files, dir, opts, diags)
}

// LoadSource reads a pipeline held in memory, e.g. one built from command
// line flags; name labels it in diagnostics and dir is its path.root.
func LoadSource(name string, src []byte, dir string, opts Options) (*Pipeline, hcl.Diagnostics) {
	parser := hclparse.NewParser()
	f, diags := parser.ParseHCL(src, name)
	var files []*hcl.File
	if f != nil {
		files = append(files, f)
	}
	return load(parser, files, dir, opts, diags)
}

func load(parser *hclparse.Parser, files []*hcl.File, dir string, opts Options, diags hcl.Diagnostics) (*Pipeline, hcl.Diagnostics) {
	p := &Pipeline{Dir: dir, Files: parser.Files()}
	if diags.HasErrors() {
		return p, diags
	}
	h := sha256.New()
	names := make([]string, 0, len(parser.Files()))
	for n := range parser.Files() {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.Base(n), len(parser.Files()[n].Bytes))
		h.Write(parser.Files()[n].Bytes)
	}
	p.Digest = hex.EncodeToString(h.Sum(nil))

	var blocks hcl.Blocks
	for _, f := range files {
		content, d := f.Body.Content(topSchema)
		diags = append(diags, d...)
		blocks = append(blocks, content.Blocks...)
	}
	if diags.HasErrors() {
		return p, diags
	}

	pins, d := decodePins(blocks.OfType("sluice"))
	diags = append(diags, d...)
	p.Plugins = pins
	vars, d := decodeVariables(blocks.OfType("variable"), opts, parser)
	diags = append(diags, d...)
	p.Variables = vars
	for k, v := range parser.Files() {
		p.Files[k] = v
	}
	if diags.HasErrors() {
		return p, diags
	}
	ctx := baseContext(dir, vars)
	locals, d := evalLocals(blocks.OfType("locals"), ctx)
	diags = append(diags, d...)
	ctx.Variables["local"] = cty.ObjectVal(locals)
	p.EvalContext = ctx
	if diags.HasErrors() {
		return p, diags
	}

	stages, d := decodeStages(blocks, ctx)
	diags = append(diags, d...)
	p.Stages = stages
	return p, diags
}

func decodeStages(blocks hcl.Blocks, ctx *hcl.EvalContext) ([]*Stage, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var stages []*Stage
	byAddr := map[string]*Stage{}
	for _, b := range blocks {
		var kind Kind
		switch b.Type {
		case "source":
			kind = Source
		case "transform":
			kind = Transform
		case "sink":
			kind = Sink
		default:
			continue
		}
		s := &Stage{Kind: kind, Type: b.Labels[0], Name: b.Labels[1], DeclRange: b.DefRange, Enabled: true}
		if !hclIdent(s.Name) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid stage name",
				Detail:   fmt.Sprintf("A stage name must start with a letter or underscore and hold only letters, digits, underscores and dashes; %q does not.", s.Name),
				Subject:  b.LabelRanges[1].Ptr(),
			})
			continue
		}
		if prev, dup := byAddr[s.Addr()]; dup {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate stage",
				Detail:   fmt.Sprintf("A %s named %q was already declared at %s. Names must be unique within each kind.", kind, s.Name, prev.DeclRange),
				Subject:  b.DefRange.Ptr(),
			})
			continue
		}
		content, rest, d := b.Body.PartialContent(metaSchema)
		diags = append(diags, d...)
		s.Body = rest
		if attr, ok := content.Attributes["enabled"]; ok {
			v, d := attr.Expr.Value(ctx)
			diags = append(diags, d...)
			if !d.HasErrors() {
				if v.Type() != cty.Bool || v.IsNull() || !v.IsKnown() {
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError, Summary: "Invalid enabled value",
						Detail: "enabled must be true or false.", Subject: attr.Expr.Range().Ptr(),
					})
				} else {
					s.Enabled = v.True()
				}
			}
		}
		if attr, ok := content.Attributes["input"]; ok {
			s.InputRange = attr.Expr.Range()
			if kind == Source {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError, Summary: "Sources take no input",
					Detail: "A source reads files; remove the input argument.", Subject: attr.NameRange.Ptr(),
				})
			}
		} else if kind != Source {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: "Missing input",
				Detail:  fmt.Sprintf("A %s needs input = <stage address>, e.g. input = source.hf.", kind),
				Subject: b.DefRange.Ptr(),
			})
		}
		stages = append(stages, s)
		byAddr[s.Addr()] = s
		s.Body = rest
		if attr, ok := content.Attributes["input"]; ok && kind != Source {
			// Resolved below, once every stage is known.
			s.inputExpr = attr.Expr
		}
	}
	for _, s := range stages {
		if s.inputExpr == nil {
			continue
		}
		addr, d := referenceAddr(s.inputExpr)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		in, ok := byAddr[addr]
		if !ok {
			diags = append(diags, undeclared(addr, s.inputExpr.Range(), byAddr))
			continue
		}
		if in.Kind == Sink {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: "A sink has no output",
				Detail:  fmt.Sprintf("%s writes files; it cannot be the input of %s.", addr, s.Addr()),
				Subject: s.inputExpr.Range().Ptr(),
			})
			continue
		}
		s.Input = in
		in.Consumers = append(in.Consumers, s)
	}
	if diags.HasErrors() {
		return stages, diags
	}
	ordered, d := topoSort(stages)
	diags = append(diags, d...)
	for _, s := range ordered {
		if s.Input != nil && !s.Input.Enabled {
			s.Enabled = false
		}
	}
	return ordered, diags
}

// referenceAddr reads "kind.name" from a reference expression without
// evaluating it.
func referenceAddr(expr hcl.Expression) (string, hcl.Diagnostics) {
	trav, diags := hcl.AbsTraversalForExpr(expr)
	if diags.HasErrors() || len(trav) != 2 {
		return "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid reference",
			Detail:   "input must name a stage: source.NAME or transform.NAME, without quotes.",
			Subject:  expr.Range().Ptr(),
		}}
	}
	root := trav.RootName()
	attr, ok := trav[1].(hcl.TraverseAttr)
	if !ok || (root != "source" && root != "transform" && root != "sink") {
		return "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid reference",
			Detail:   fmt.Sprintf("input must name a source or transform, like source.hf; %q is neither.", root),
			Subject:  expr.Range().Ptr(),
		}}
	}
	return root + "." + attr.Name, nil
}

func undeclared(addr string, rng hcl.Range, byAddr map[string]*Stage) *hcl.Diagnostic {
	var all []string
	for a := range byAddr {
		all = append(all, a)
	}
	sort.Strings(all)
	detail := fmt.Sprintf("No stage %q is declared.", addr)
	if s := suggest(addr, all); s != "" {
		detail += fmt.Sprintf(" Did you mean %q?", s)
	} else if len(all) > 0 {
		detail += " Declared stages: " + strings.Join(all, ", ") + "."
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to undeclared stage", Detail: detail, Subject: rng.Ptr()}
}

// suggest returns the closest candidate within a small edit distance.
func suggest(given string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		d := levenshtein.Distance(given, c, nil)
		if d <= 2+len(given)/5 && (best == "" || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best
}

// topSort orders stages so every input comes first, keeping declaration
// order otherwise, and reports cycles.
func topoSort(stages []*Stage) ([]*Stage, hcl.Diagnostics) {
	state := map[*Stage]int{} // 0 new, 1 visiting, 2 done
	var out []*Stage
	var diags hcl.Diagnostics
	var visit func(s *Stage, path []*Stage) bool
	visit = func(s *Stage, path []*Stage) bool {
		switch state[s] {
		case 2:
			return true
		case 1:
			var names []string
			start := 0
			for i, p := range path {
				if p == s {
					start = i
				}
			}
			for _, p := range path[start:] {
				names = append(names, p.Addr())
			}
			names = append(names, s.Addr())
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: "Cycle between stages",
				Detail:  "The stages read from each other: " + strings.Join(names, " → ") + ".",
				Subject: s.InputRange.Ptr(),
			})
			return false
		}
		state[s] = 1
		if s.Input != nil && !visit(s.Input, append(path, s)) {
			return false
		}
		state[s] = 2
		out = append(out, s)
		return true
	}
	for _, s := range stages {
		if state[s] == 0 && !visit(s, nil) {
			return stages, diags
		}
	}
	return out, diags
}

func hclIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case i > 0 && (r == '-' || (r >= '0' && r <= '9')):
		default:
			return false
		}
	}
	return true
}
