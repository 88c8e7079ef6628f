package pipeline

import (
	"encoding/hex"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

var sluiceSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "plugin", LabelNames: []string{"name"}}},
}

var pinSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "sha256", Required: true}},
}

// decodePins reads the sluice block's plugin pins:
//
//	sluice {
//	  plugin "npz" {
//	    sha256 = "9f86d081884c7d65…"
//	  }
//	}
func decodePins(blocks hcl.Blocks) (map[string]PluginPin, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	pins := map[string]PluginPin{}
	for _, b := range blocks {
		content, d := b.Body.Content(sluiceSchema)
		diags = append(diags, d...)
		for _, pb := range content.Blocks {
			name := pb.Labels[0]
			if prev, dup := pins[name]; dup {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate plugin pin",
					Detail: fmt.Sprintf("Plugin %q was already pinned at %s.", name, prev.Range), Subject: pb.DefRange.Ptr()})
				continue
			}
			pc, d := pb.Body.Content(pinSchema)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			attr := pc.Attributes["sha256"]
			v, d := attr.Expr.Value(nil)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			if v.Type() != cty.String || v.IsNull() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid sha256",
					Detail: "sha256 must be a string of 64 hexadecimal digits.", Subject: attr.Expr.Range().Ptr()})
				continue
			}
			sum := v.AsString()
			if b, err := hex.DecodeString(sum); err != nil || len(b) != 32 {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid sha256",
					Detail: fmt.Sprintf("%q is not 64 hexadecimal digits. `sluice plugins list` shows each installed plugin's digest.", sum), Subject: attr.Expr.Range().Ptr()})
				continue
			}
			pins[name] = PluginPin{Name: name, SHA256: sum, Range: pb.DefRange}
		}
	}
	return pins, diags
}

// PinnedDigests returns the pins as plugin name → hex sha256.
func (p *Pipeline) PinnedDigests() map[string]string {
	out := make(map[string]string, len(p.Plugins))
	for n, pin := range p.Plugins {
		out[n] = pin.SHA256
	}
	return out
}
