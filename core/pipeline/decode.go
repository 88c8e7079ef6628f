package pipeline

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/sluice-ml/sluice/sdk/plugin"
)

// Specs gives the decoding spec of every stage type: plugins' schemas for
// sources and sinks, the core's for transforms.
type Specs interface {
	// Spec returns the spec of a stage type and the names of its sensitive
	// attributes, or false when nothing provides the type.
	Spec(kind Kind, typ string) (spec hcldec.Spec, sensitive []string, ok bool)
	// Types lists the known types of a kind, for suggestions.
	Types(kind Kind) []string
}

// Decode decodes every stage body against its type's spec, reporting unknown
// types, unknown or missing attributes and wrong types at their lines.
func (p *Pipeline) Decode(specs Specs) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, s := range p.Stages {
		spec, sensitive, ok := specs.Spec(s.Kind, s.Type)
		if !ok {
			detail := fmt.Sprintf("No plugin provides a %s of type %q.", s.Kind, s.Type)
			types := specs.Types(s.Kind)
			if sug := suggest(s.Type, types); sug != "" {
				detail += fmt.Sprintf(" Did you mean %q?", sug)
			} else if len(types) > 0 {
				detail += " Known types: " + strings.Join(types, ", ") + "."
			}
			if u, ok := specs.(interface{ Unavailable(Kind, string) string }); ok {
				if why := u.Unavailable(s.Kind, s.Type); why != "" {
					detail += " Plugins that could not be started: " + why
				}
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown " + s.Kind.String() + " type",
				Detail: detail, Subject: s.DeclRange.Ptr()})
			continue
		}
		val, d := hcldec.Decode(s.Body, spec, p.EvalContext)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		s.Config = val
		s.Sensitive = map[string]bool{}
		for _, n := range sensitive {
			s.Sensitive[n] = true
		}
	}
	return diags
}

// SchemaSpec turns a plugin's schema into an hcldec spec.
func SchemaSpec(s *plugin.Schema) (hcldec.Spec, []string, error) {
	obj := hcldec.ObjectSpec{}
	var sensitive []string
	for _, a := range s.Attributes {
		t, err := ParseType(a.Type)
		if err != nil {
			return nil, nil, fmt.Errorf("attribute %q: %w", a.Name, err)
		}
		obj[a.Name] = &hcldec.AttrSpec{Name: a.Name, Type: t, Required: a.Required}
		if a.Sensitive {
			sensitive = append(sensitive, a.Name)
		}
	}
	return obj, sensitive, nil
}

// ParseType parses an HCL type constraint such as "list(string)".
func ParseType(s string) (cty.Type, error) {
	expr, diags := hclsyntax.ParseExpression([]byte(s), "type", hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return cty.NilType, fmt.Errorf("bad type %q: %s", s, diags.Error())
	}
	t, diags := typeexpr.TypeConstraint(expr)
	if diags.HasErrors() {
		return cty.NilType, fmt.Errorf("bad type %q: %s", s, diags.Error())
	}
	return t, nil
}

// ConfigJSON encodes a stage's decoded configuration for its plugin, with
// every value unmarked.
func (s *Stage) ConfigJSON() ([]byte, error) {
	if s.Config == cty.NilVal || s.Config.IsNull() {
		return []byte("{}"), nil
	}
	val, _ := s.Config.UnmarkDeep()
	b, err := ctyjson.Marshal(val, val.Type())
	if err != nil {
		return nil, fmt.Errorf("%s: encoding configuration: %w", s.Addr(), err)
	}
	return b, nil
}

// IsSensitive reports whether an attribute of the stage must not be shown:
// its schema says so or its value derives from a sensitive variable.
func (s *Stage) IsSensitive(attr string) bool {
	if s.Sensitive[attr] {
		return true
	}
	if s.Config == cty.NilVal || s.Config.IsNull() || !s.Config.Type().IsObjectType() || !s.Config.Type().HasAttribute(attr) {
		return false
	}
	return s.Config.GetAttr(attr).ContainsMarked()
}

// StringAttr returns the value of a string attribute of the stage, unmarked
// (a sensitive value included: check IsSensitive before showing it); false
// when the stage has no such attribute, or it is null or unknown.
func (s *Stage) StringAttr(attr string) (string, bool) {
	if s.Config == cty.NilVal || s.Config.IsNull() || !s.Config.IsKnown() || !s.Config.Type().IsObjectType() || !s.Config.Type().HasAttribute(attr) {
		return "", false
	}
	v, _ := s.Config.GetAttr(attr).Unmark()
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// Attributes lists the stage's set attributes, sorted, with values rendered
// for people and sensitive ones redacted.
func (s *Stage) Attributes() [][2]string {
	if s.Config == cty.NilVal || s.Config.IsNull() || !s.Config.Type().IsObjectType() {
		return nil
	}
	var out [][2]string
	for name := range s.Config.Type().AttributeTypes() {
		v := s.Config.GetAttr(name)
		if v.IsNull() {
			continue
		}
		if s.IsSensitive(name) {
			out = append(out, [2]string{name, "(sensitive)"})
			continue
		}
		uv, _ := v.UnmarkDeep()
		b, err := ctyjson.Marshal(uv, uv.Type())
		if err != nil {
			out = append(out, [2]string{name, "?"})
			continue
		}
		out = append(out, [2]string{name, string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// AttrRange returns the source range of an attribute in the stage body, for
// diagnostics from plugins; the block header when it is not set.
func (s *Stage) AttrRange(name string) hcl.Range {
	if name != "" {
		if attrs, diags := s.Body.JustAttributes(); !diags.HasErrors() {
			if a, ok := attrs[name]; ok {
				return a.Range
			}
		} else if sb, ok := s.Body.(*hclsyntax.Body); ok {
			if a, ok := sb.Attributes[name]; ok {
				return a.SrcRange
			}
		}
	}
	return s.DeclRange
}
