package transform

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/llamanames"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func init() {
	Register("rename", Factory{
		Doc: "Renames tensors: first with a built-in map (map = \"hf-llama-to-gguf\" or \"gguf-to-hf-llama\"), " +
			"then with ordered regular-expression rules, the first matching rule rewriting the name " +
			"(rule { from = \"^model\\\\.\", to = \"\" }). Bytes are untouched. Two tensors ending with one name is an error.",
		Spec: hcldec.ObjectSpec{
			"map":      &hcldec.AttrSpec{Name: "map", Type: cty.String},
			"unmapped": &hcldec.AttrSpec{Name: "unmapped", Type: cty.String},
			"rule": &hcldec.BlockListSpec{TypeName: "rule", Nested: hcldec.ObjectSpec{
				"from": &hcldec.AttrSpec{Name: "from", Type: cty.String, Required: true},
				"to":   &hcldec.AttrSpec{Name: "to", Type: cty.String, Required: true},
			}},
		},
		New: newRename,
	})
}

// Built-in name maps.
var renameMaps = map[string]func(string) (string, bool){
	"hf-llama-to-gguf": llamanames.ToGGUF,
	"gguf-to-hf-llama": llamanames.ToHF,
}

type renameRule struct {
	re *regexp.Regexp
	to string
}

type rename struct {
	mapName  string
	mapFn    func(string) (string, bool)
	unmapped string // keep or error
	rules    []renameRule
}

func newRename(cfg cty.Value) (Transform, error) {
	a := newAttrs(cfg)
	r := &rename{unmapped: "keep"}
	if a.has("map") {
		r.mapName = a.str("map")
		fn, ok := renameMaps[r.mapName]
		if !ok {
			return nil, plugin.ConfigErrorf("map", "unknown map %q (known: hf-llama-to-gguf, gguf-to-hf-llama)", r.mapName)
		}
		r.mapFn = fn
	}
	if a.has("unmapped") {
		r.unmapped = a.str("unmapped")
		if r.unmapped != "keep" && r.unmapped != "error" {
			return nil, plugin.ConfigErrorf("unmapped", "must be \"keep\" (leave names the map does not know) or \"error\"")
		}
		if r.mapFn == nil {
			return nil, plugin.ConfigErrorf("unmapped", "only applies with map")
		}
	}
	for _, b := range a.blocks("rule") {
		re, err := regexp.Compile(b.str("from"))
		if err != nil {
			return nil, configErr(b, "from", "%v", err)
		}
		r.rules = append(r.rules, renameRule{re: re, to: b.str("to")})
	}
	if r.mapFn == nil && len(r.rules) == 0 {
		return nil, plugin.ConfigErrorf("", "give a map or rule blocks")
	}
	return r, nil
}

func (r *rename) newName(name string) (string, string, error) {
	out, why := name, ""
	if r.mapFn != nil {
		if n, ok := r.mapFn(name); ok {
			out, why = n, r.mapName
		} else if r.unmapped == "error" {
			return "", "", fmt.Errorf("has no name in map %s (set unmapped = \"keep\" to leave it, or drop it with a filter stage first)", r.mapName)
		}
	}
	for i, rule := range r.rules {
		if rule.re.MatchString(out) {
			out = rule.re.ReplaceAllString(out, rule.to)
			if why != "" {
				why += ", then "
			}
			why += fmt.Sprintf("rule %d", i+1)
			break
		}
	}
	return out, why, nil
}

func (r *rename) Plan(in *tensor.Manifest) (*Plan, error) {
	p := Identity(in)
	from := map[string]string{} // new name → old name
	renamed := map[string]string{}
	n := 0
	var kept []string
	for i := range in.Tensors {
		t := &in.Tensors[i]
		name, why, err := r.newName(t.Name)
		if err != nil {
			return nil, &TensorError{Tensor: t.Name, Msg: err.Error(), Config: true}
		}
		if name == "" {
			return nil, &TensorError{Tensor: t.Name, Msg: fmt.Sprintf("would be renamed to the empty name (%s)", why), Config: true}
		}
		if prev, dup := from[name]; dup {
			return nil, &CollisionError{Name: name, First: prev, Second: t.Name}
		}
		from[name] = t.Name
		if name != t.Name {
			renamed[t.Name] = name
			p.Out.Tensors[i].Name = name
			p.Decisions = append(p.Decisions, plugin.Decision{Tensor: t.Name, Msg: fmt.Sprintf("→ %s (%s)", name, why)})
			n++
		} else if r.mapFn != nil && why == "" {
			kept = append(kept, t.Name)
		}
	}
	// Ties follow their tensor's new name.
	for i := range p.Out.Tensors {
		t := &p.Out.Tensors[i]
		if to := t.Attr(tensor.AttrTiedTo); to != "" {
			if nn, ok := renamed[to]; ok {
				t.SetAttr(tensor.AttrTiedTo, nn)
			}
		}
	}
	summary := fmt.Sprintf("%d tensors renamed", n)
	if len(kept) > 0 {
		summary += fmt.Sprintf("; %d have no name in map %s and keep theirs: %s", len(kept), r.mapName, abbreviate(kept, 6))
	}
	p.Decisions = append([]plugin.Decision{{Msg: summary}}, p.Decisions...)
	return p, nil
}

// CollisionError reports two tensors that a stage would give one name.
type CollisionError struct {
	Name          string
	First, Second string
}

func (e *CollisionError) Error() string {
	return fmt.Sprintf("tensors %q and %q would both be named %q", e.First, e.Second, e.Name)
}

// BadConfig marks a collision as the configuration's fault.
func (e *CollisionError) BadConfig() bool { return true }

func abbreviate(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(", … (%d more)", len(names)-n)
}
