package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/plugin"
)

// fakeSpecs provides schemas for a few stage types.
type fakeSpecs struct{}

func (fakeSpecs) Spec(kind Kind, typ string) (hcldec.Spec, []string, bool) {
	switch {
	case kind == Source && typ == "files", kind == Sink && typ == "files":
		s, sens, _ := SchemaSpec(&plugin.Schema{Attributes: []plugin.Attribute{
			{Name: "path", Type: "string", Required: true},
			{Name: "key", Type: "string", Sensitive: true},
			{Name: "only", Type: "list(string)"},
		}})
		return s, sens, true
	case kind == Transform && typ == "pass":
		return hcldec.ObjectSpec{"note": &hcldec.AttrSpec{Name: "note", Type: cty.String}}, nil, true
	}
	return nil, nil, false
}

func (fakeSpecs) Types(kind Kind) []string {
	if kind == Transform {
		return []string{"pass"}
	}
	return []string{"files"}
}

func loadText(t *testing.T, src string, opts Options) (*Pipeline, hcl.Diagnostics) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	pl, diags := Load(p, opts)
	if !diags.HasErrors() {
		diags = append(diags, pl.Decode(fakeSpecs{})...)
	}
	return pl, diags
}

func TestGraphOrderFanOutAndDisabling(t *testing.T) {
	p, diags := loadText(t, `
sink "files" "b" {
  input = transform.t
  path  = "b"
}
transform "pass" "t" {
  input = source.s
}
source "files" "s" { path = "in" }
sink "files" "a" {
  input = source.s
  path  = "a"
}
sink "files" "off" {
  input   = transform.t
  path    = "off"
  enabled = false
}
transform "pass" "dead" {
  input   = source.s
  enabled = false
}
sink "files" "downstream" {
  input = transform.dead
  path  = "d"
}
`, Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	pos := map[string]int{}
	for i, s := range p.Stages {
		pos[s.Addr()] = i
	}
	if !(pos["source.s"] < pos["transform.t"] && pos["transform.t"] < pos["sink.b"]) {
		t.Errorf("stages out of dependency order: %v", pos)
	}
	src, _ := p.Stage("source.s")
	if len(src.Consumers) != 3 {
		t.Errorf("source.s feeds %d stages, want 3 (fan-out)", len(src.Consumers))
	}
	for addr, want := range map[string]bool{"sink.b": true, "sink.off": false, "transform.dead": false, "sink.downstream": false} {
		s, _ := p.Stage(addr)
		if s.Enabled != want {
			t.Errorf("%s enabled = %v, want %v", addr, s.Enabled, want)
		}
	}
}

func TestVariablesPrecedenceTypesAndSensitivity(t *testing.T) {
	src := `
variable "n" {
  type    = number
  default = 1
}
variable "names" {
  type    = list(string)
  default = []
}
variable "secret" {
  type      = string
  sensitive = true
}
locals {
  doubled = local.base * 2
  base    = var.n + 1
}
source "files" "s" {
  path = "in-${local.doubled}"
  key  = var.secret
}
`
	dir := t.TempDir()
	vf := filepath.Join(dir, "v.sluicevars.hcl")
	os.WriteFile(vf, []byte("n = 5\nnames = [\"a\", \"b\"]\n"), 0o644)
	p, diags := loadText(t, src, Options{
		Environ:  []string{"SLUICE_VAR_n=3", "SLUICE_VAR_secret=hunter2", "SLUICE_VAR_undeclared=x"},
		VarFiles: []string{vf},
		Vars:     []string{"n=7"},
	})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	s, _ := p.Stage("source.s")
	if got := s.Config.GetAttr("path").AsString(); got != "in-16" {
		t.Errorf("path = %q, want in-16 (n=7 from -var wins; locals in dependency order)", got)
	}
	if !s.IsSensitive("key") {
		t.Errorf("key set from a sensitive variable is not sensitive")
	}
	if got, ok := s.StringAttr("path"); !ok || got != "in-16" {
		t.Errorf("StringAttr(path) = %q, %v; want in-16", got, ok)
	}
	if got, ok := s.StringAttr("key"); !ok || got != "hunter2" {
		t.Errorf("StringAttr(key) = %q, %v; want the sensitive value, unmarked", got, ok)
	}
	if got, ok := s.StringAttr("absent"); ok {
		t.Errorf("StringAttr(absent) = %q, true", got)
	}
	for _, a := range s.Attributes() {
		if strings.Contains(a[1], "hunter2") {
			t.Errorf("attribute listing leaks the secret: %v", a)
		}
	}
	js, err := s.ConfigJSON()
	if err != nil || !strings.Contains(string(js), "hunter2") {
		t.Errorf("the plugin must still receive the secret: %s %v", js, err)
	}
	for _, v := range p.Variables {
		if v.Name == "names" && v.Value.LengthInt() != 2 {
			t.Errorf("names from the var file: %#v", v.Value)
		}
	}
}

func TestDiagnostics(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		opts Options
		want string
	}{
		{"unknown attribute", `source "files" "s" { pth = "x" }`, Options{}, `Did you mean "path"?`},
		{"unknown type", `source "file" "s" { path = "x" }`, Options{}, `Did you mean "files"?`},
		{"undeclared input", "source \"files\" \"s\" { path = \"x\" }\nsink \"files\" \"o\" {\n  input = source.t\n  path = \"y\"\n}", Options{}, `Did you mean "source.s"?`},
		{"string input", "source \"files\" \"s\" { path = \"x\" }\nsink \"files\" \"o\" {\n  input = \"source.s\"\n  path = \"y\"\n}", Options{}, "without quotes"},
		{"sink as input", "source \"files\" \"s\" { path = \"x\" }\nsink \"files\" \"o\" {\n  input = source.s\n  path = \"y\"\n}\nsink \"files\" \"p\" {\n  input = sink.o\n  path = \"z\"\n}", Options{}, "cannot be the input"},
		{"source with input", "source \"files\" \"s\" {\n  input = source.s\n  path = \"x\"\n}", Options{}, "Sources take no input"},
		{"missing input", "sink \"files\" \"o\" { path = \"y\" }", Options{}, "Missing input"},
		{"duplicate stage", "source \"files\" \"s\" { path = \"x\" }\nsource \"files\" \"s\" { path = \"y\" }", Options{}, "Duplicate stage"},
		{"cycle", "transform \"pass\" \"a\" { input = transform.b }\ntransform \"pass\" \"b\" { input = transform.a }", Options{}, "Cycle between stages"},
		{"local cycle", "locals {\n  a = local.b\n  b = local.a\n}", Options{}, "Cycle between local values"},
		{"required variable", `variable "v" { type = string }`, Options{}, "SLUICE_VAR_v"},
		{"bad variable type", "variable \"v\" { type = number }", Options{Vars: []string{"v=abc"}}, `"abc" is not a valid number`},
		{"undeclared -var", `variable "size" { default = 1 }`, Options{Vars: []string{"szie=2"}}, `Did you mean "size"?`},
		{"validation", "variable \"v\" {\n  default = 1\n  validation {\n    condition = var.v > 2\n    error_message = \"v must exceed 2.\"\n  }\n}", Options{}, "v must exceed 2."},
		{"wrong attribute type", `source "files" "s" { path = ["x"] }`, Options{}, "Incorrect attribute value type"},
		{"syntax", `source "files" "s" { path = }`, Options{}, "Invalid expression"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := loadText(t, tc.src, tc.opts)
			if !diags.HasErrors() {
				t.Fatal("accepted")
			}
			var all strings.Builder
			for _, d := range diags {
				all.WriteString(d.Summary + ": " + d.Detail + "\n")
			}
			if !strings.Contains(all.String(), tc.want) {
				t.Errorf("diagnostics lack %q:\n%s", tc.want, all.String())
			}
			for _, d := range diags {
				if d.Severity == hcl.DiagError && d.Subject == nil && !strings.Contains(tc.name, "var") {
					t.Errorf("diagnostic %q has no source range", d.Summary)
				}
			}
		})
	}
}

func TestLoadSourceAndDigest(t *testing.T) {
	src := []byte("source \"files\" \"s\" { path = \"x\" }\n")
	a, diags := LoadSource("a.hcl", src, ".", Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	b, _ := LoadSource("a.hcl", append(src, '\n'), ".", Options{})
	if a.Digest == "" || a.Digest == b.Digest {
		t.Errorf("digest must change with the text: %q vs %q", a.Digest, b.Digest)
	}
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte("source \"files\" \"s\" { path = \"x\" }\nsink \"files\" \"o\" {\n  input = source.s\n  path = \"y\"\n}\n"))
	f.Add([]byte("variable \"v\" {\n type = list(number)\n default = [1]\n validation {\n condition = length(var.v) > 0\n error_message = \"e\"\n }\n}\nlocals { a = var.v }\n"))
	f.Add([]byte("transform \"pass\" \"a\" { input = transform.a }\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		p, diags := LoadSource("fuzz.hcl", src, ".", Options{Vars: []string{"v=[2]"}})
		if !diags.HasErrors() {
			p.Decode(fakeSpecs{})
		}
	})
}
