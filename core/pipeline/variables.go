package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// SensitiveMark marks values that must never be shown.
const SensitiveMark = "sensitive"

// Variable is a declared input variable.
type Variable struct {
	Name        string
	Type        cty.Type
	Description string
	Sensitive   bool
	// Value is the final value (marked SensitiveMark when Sensitive).
	Value cty.Value
	// Set reports where the value came from: "default", "env", "var-file", "flag".
	Set       string
	DeclRange hcl.Range
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type"},
		{Name: "default"},
		{Name: "description"},
		{Name: "sensitive"},
		{Name: "nullable"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "condition", Required: true},
		{Name: "error_message", Required: true},
	},
}

type validation struct {
	condition hcl.Expression
	message   hcl.Expression
	rng       hcl.Range
}

func decodeVariables(blocks hcl.Blocks, opts Options, parser *hclparse.Parser) ([]*Variable, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var vars []*Variable
	byName := map[string]*Variable{}
	checks := map[string][]validation{}
	required := map[string]bool{}
	for _, b := range blocks {
		v := &Variable{Name: b.Labels[0], Type: cty.DynamicPseudoType, DeclRange: b.DefRange}
		if !hclIdent(v.Name) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid variable name",
				Detail: fmt.Sprintf("%q is not a valid name.", v.Name), Subject: b.LabelRanges[0].Ptr()})
			continue
		}
		if prev, dup := byName[v.Name]; dup {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate variable",
				Detail: fmt.Sprintf("Variable %q was already declared at %s.", v.Name, prev.DeclRange), Subject: b.DefRange.Ptr()})
			continue
		}
		content, d := b.Body.Content(variableSchema)
		diags = append(diags, d...)
		if a, ok := content.Attributes["type"]; ok {
			t, d := typeexpr.TypeConstraint(a.Expr)
			diags = append(diags, d...)
			if !d.HasErrors() {
				v.Type = t
			}
		}
		if a, ok := content.Attributes["description"]; ok {
			val, d := a.Expr.Value(nil)
			diags = append(diags, d...)
			if !d.HasErrors() && val.Type() == cty.String && !val.IsNull() {
				v.Description = val.AsString()
			}
		}
		if a, ok := content.Attributes["sensitive"]; ok {
			val, d := a.Expr.Value(nil)
			diags = append(diags, d...)
			if !d.HasErrors() {
				if val.Type() != cty.Bool || val.IsNull() {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid sensitive value",
						Detail: "sensitive must be true or false.", Subject: a.Expr.Range().Ptr()})
				} else {
					v.Sensitive = val.True()
				}
			}
		}
		if a, ok := content.Attributes["default"]; ok {
			val, d := a.Expr.Value(nil)
			diags = append(diags, d...)
			if !d.HasErrors() {
				conv, err := convertValue(val, v.Type)
				if err != nil {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid default value",
						Detail: fmt.Sprintf("The default of variable %q does not fit its type: %s.", v.Name, err), Subject: a.Expr.Range().Ptr()})
				} else {
					v.Value, v.Set = conv, "default"
				}
			}
		} else {
			required[v.Name] = true
		}
		for _, vb := range content.Blocks {
			vc, d := vb.Body.Content(validationSchema)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			checks[v.Name] = append(checks[v.Name], validation{
				condition: vc.Attributes["condition"].Expr, message: vc.Attributes["error_message"].Expr, rng: vb.DefRange,
			})
		}
		vars = append(vars, v)
		byName[v.Name] = v
	}
	if diags.HasErrors() {
		return vars, diags
	}
	diags = append(diags, applyOverrides(byName, opts, parser)...)
	if diags.HasErrors() {
		return vars, diags
	}
	for _, v := range vars {
		if v.Set == "" && required[v.Name] {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No value for required variable",
				Detail: fmt.Sprintf("Variable %q has no default. Set it with -var %s=VALUE, a -var-file, or the environment variable %s%s.",
					v.Name, v.Name, EnvPrefix, v.Name),
				Subject: v.DeclRange.Ptr()})
			continue
		}
		if v.Sensitive {
			v.Value = v.Value.Mark(SensitiveMark)
		}
		for _, c := range checks[v.Name] {
			diags = append(diags, runValidation(v, c)...)
		}
	}
	return vars, diags
}

func convertValue(val cty.Value, t cty.Type) (cty.Value, error) {
	if t == cty.DynamicPseudoType {
		return val, nil
	}
	return convert.Convert(val, t)
}

func runValidation(v *Variable, c validation) hcl.Diagnostics {
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{v.Name: v.Value})},
		Functions: functions(""),
	}
	result, diags := c.condition.Value(ctx)
	if diags.HasErrors() {
		return diags
	}
	result, _ = result.Unmark()
	if result.Type() != cty.Bool || result.IsNull() || !result.IsKnown() {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid validation condition",
			Detail: "A validation condition must give true or false.", Subject: c.condition.Range().Ptr()}}
	}
	if result.True() {
		return nil
	}
	msg := "The value is not valid."
	if m, d := c.message.Value(nil); !d.HasErrors() && m.Type() == cty.String && !m.IsNull() {
		msg = m.AsString()
	}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for variable",
		Detail:  fmt.Sprintf("%s\n\nThis was checked by the validation rule at %s.", msg, c.rng),
		Subject: c.condition.Range().Ptr()}}
}

// applyOverrides sets variables from the environment, then -var-file files,
// then -var flags: later sources win.
func applyOverrides(vars map[string]*Variable, opts Options, parser *hclparse.Parser) hcl.Diagnostics {
	var diags hcl.Diagnostics
	env := append([]string(nil), opts.Environ...)
	sort.Strings(env)
	for _, kv := range env {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvPrefix) {
			continue
		}
		name := strings.TrimPrefix(k, EnvPrefix)
		v, declared := vars[name]
		if !declared {
			continue
		}
		parsed, d := parseRawValue(val, v, "environment variable "+k)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.Value, v.Set = parsed, "env"
		}
	}
	for _, path := range opts.VarFiles {
		f, d := parser.ParseHCLFile(path)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		attrs, d := f.Body.JustAttributes()
		diags = append(diags, d...)
		names := make([]string, 0, len(attrs))
		for n := range attrs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			a := attrs[n]
			v, declared := vars[n]
			if !declared {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value for undeclared variable",
					Detail:  fmt.Sprintf("The file sets %q, which the pipeline does not declare.%s", n, didYouMeanVar(n, vars)),
					Subject: a.NameRange.Ptr()})
				continue
			}
			val, d := a.Expr.Value(nil)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			conv, err := convertValue(val, v.Type)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
					Detail: fmt.Sprintf("Variable %q: %s.", n, err), Subject: a.Expr.Range().Ptr()})
				continue
			}
			v.Value, v.Set = conv, "var-file"
		}
	}
	for _, kv := range opts.Vars {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -var option",
				Detail: fmt.Sprintf("%q is not name=value.", kv)})
			continue
		}
		v, declared := vars[name]
		if !declared {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value for undeclared variable",
				Detail: fmt.Sprintf("-var sets %q, which the pipeline does not declare.%s", name, didYouMeanVar(name, vars))})
			continue
		}
		parsed, d := parseRawValue(val, v, "-var "+name)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.Value, v.Set = parsed, "flag"
		}
	}
	return diags
}

func didYouMeanVar(name string, vars map[string]*Variable) string {
	var all []string
	for n := range vars {
		all = append(all, n)
	}
	if s := suggest(name, all); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	return ""
}

// parseRawValue reads a value given as text: taken literally for string
// variables, parsed as an HCL expression otherwise.
func parseRawValue(raw string, v *Variable, where string) (cty.Value, hcl.Diagnostics) {
	if v.Type == cty.String || v.Type == cty.DynamicPseudoType {
		return cty.StringVal(raw), nil
	}
	bad := func(reason string) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for variable",
			Detail: fmt.Sprintf("%s: %q is not a valid %s for variable %q (%s). Values of non-string variables are HCL expressions, e.g. 3, true, [\"a\", \"b\"].",
				where, raw, v.Type.FriendlyName(), v.Name, reason)}}
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), where, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return cty.NilVal, bad(diags[0].Summary)
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, bad(diags[0].Summary)
	}
	conv, err := convert.Convert(val, v.Type)
	if err != nil {
		return cty.NilVal, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for variable",
			Detail: fmt.Sprintf("%s: variable %q needs %s: %s.", where, v.Name, v.Type.FriendlyName(), err)}}
	}
	return conv, nil
}

func baseContext(dir string, vars []*Variable) *hcl.EvalContext {
	vals := map[string]cty.Value{}
	for _, v := range vars {
		vals[v.Name] = v.Value
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	cwd, _ := os.Getwd()
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var":  cty.ObjectVal(vals),
			"path": cty.ObjectVal(map[string]cty.Value{"root": cty.StringVal(abs), "cwd": cty.StringVal(cwd)}),
		},
		Functions: functions(abs),
	}
}

// evalLocals evaluates every locals attribute in dependency order.
func evalLocals(blocks hcl.Blocks, ctx *hcl.EvalContext) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	exprs := map[string]*hcl.Attribute{}
	for _, b := range blocks {
		attrs, d := b.Body.JustAttributes()
		diags = append(diags, d...)
		for n, a := range attrs {
			if prev, dup := exprs[n]; dup {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate local value",
					Detail: fmt.Sprintf("Local %q was already defined at %s.", n, prev.Range), Subject: a.NameRange.Ptr()})
				continue
			}
			exprs[n] = a
		}
	}
	values := map[string]cty.Value{}
	pending := map[string]bool{}
	for n := range exprs {
		pending[n] = true
	}
	for len(pending) > 0 {
		progress := false
		names := make([]string, 0, len(pending))
		for n := range pending {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			a := exprs[n]
			ready := true
			for _, tr := range a.Expr.Variables() {
				if tr.RootName() != "local" || len(tr) < 2 {
					continue
				}
				if ta, ok := tr[1].(hcl.TraverseAttr); ok && pending[ta.Name] {
					if _, known := exprs[ta.Name]; known {
						ready = false
					}
				}
			}
			if !ready {
				continue
			}
			ctx.Variables["local"] = cty.ObjectVal(values)
			v, d := a.Expr.Value(ctx)
			diags = append(diags, d...)
			if d.HasErrors() {
				v = cty.DynamicVal
			}
			values[n] = v
			delete(pending, n)
			progress = true
		}
		if !progress {
			names := make([]string, 0, len(pending))
			for n := range pending {
				names = append(names, "local."+n)
			}
			sort.Strings(names)
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cycle between local values",
				Detail: "These locals refer to each other: " + strings.Join(names, ", ") + ".", Subject: exprs[strings.TrimPrefix(names[0], "local.")].Range.Ptr()})
			break
		}
	}
	return values, diags
}
