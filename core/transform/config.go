package transform

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/llamanames"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// attrs reads a decoded transform body. Values derived from sensitive
// variables arrive marked; the transforms use them unmarked and never show
// them.
type attrs struct {
	v    cty.Value
	path string // prefix for error messages, e.g. "rule 2: "
}

func newAttrs(cfg cty.Value) attrs {
	v, _ := cfg.UnmarkDeep()
	return attrs{v: v}
}

func (a attrs) get(name string) cty.Value {
	if a.v == cty.NilVal || a.v.IsNull() || !a.v.Type().IsObjectType() || !a.v.Type().HasAttribute(name) {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	return a.v.GetAttr(name)
}

func (a attrs) has(name string) bool { return !a.get(name).IsNull() }

func (a attrs) str(name string) string {
	v := a.get(name)
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}

func (a attrs) boolean(name string) bool {
	v := a.get(name)
	return !v.IsNull() && v.IsKnown() && v.Type() == cty.Bool && v.True()
}

// integer reads a whole number within [lo, hi]; ok is false when unset.
func (a attrs) integer(name string, lo, hi int64) (n int64, ok bool, err error) {
	v := a.get(name)
	if v.IsNull() {
		return 0, false, nil
	}
	if v.Type() != cty.Number {
		return 0, false, plugin.ConfigErrorf(name, "%smust be a number", a.path)
	}
	bf := v.AsBigFloat()
	i, acc := bf.Int64()
	if acc != big.Exact || !bf.IsInt() {
		return 0, false, plugin.ConfigErrorf(name, "%smust be a whole number, not %s", a.path, bf.Text('g', 10))
	}
	if i < lo || i > hi {
		return 0, false, plugin.ConfigErrorf(name, "%s%d is out of range [%d, %d]", a.path, i, lo, hi)
	}
	return i, true, nil
}

func (a attrs) strings(name string) []string {
	v := a.get(name)
	if v.IsNull() || !v.CanIterateElements() {
		return nil
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if !e.IsNull() && e.Type() == cty.String {
			out = append(out, e.AsString())
		}
	}
	return out
}

// blocks returns the nested blocks decoded under name.
func (a attrs) blocks(name string) []attrs {
	v := a.get(name)
	if v.IsNull() || !v.CanIterateElements() {
		return nil
	}
	var out []attrs
	i := 0
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		i++
		out = append(out, attrs{v: e, path: fmt.Sprintf("%s block %d: ", name, i)})
	}
	return out
}

// globs is a list of shell-style patterns over tensor names: * matches any
// run of characters (dots and slashes included), ? one character, [abc] and
// [a-z] a character of the class, [!abc] one outside it. Everything else
// matches itself.
type globs struct {
	patterns []string
	res      []*regexp.Regexp
	// aliases also tries the tensor's name in the other llama naming style
	// (Hugging Face ↔ GGUF), so a rule works on both.
	aliases bool
}

func compileGlobs(attr string, patterns []string) (globs, error) {
	g := globs{patterns: patterns}
	for _, p := range patterns {
		re, err := globRegexp(p)
		if err != nil {
			return g, plugin.ConfigErrorf(attr, "pattern %q: %v", p, err)
		}
		g.res = append(g.res, re)
	}
	return g, nil
}

func globRegexp(p string) (*regexp.Regexp, error) {
	var sb strings.Builder
	sb.WriteString("^")
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '*':
			sb.WriteString(".*")
		case '?':
			sb.WriteString(".")
		case '[':
			j := strings.IndexByte(p[i+1:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unclosed [ at position %d", i+1)
			}
			class := p[i+1 : i+1+j]
			if j == 0 && i+2 < len(p) {
				// "[]...]": a ] right after [ is a member.
				k := strings.IndexByte(p[i+2:], ']')
				if k < 0 {
					return nil, fmt.Errorf("unclosed [ at position %d", i+1)
				}
				class = p[i+1 : i+2+k]
				j = k + 1
			}
			if class == "" {
				return nil, fmt.Errorf("empty character class at position %d", i+1)
			}
			neg := class[0] == '!'
			if neg {
				class = class[1:]
			}
			sb.WriteString("[")
			if neg {
				sb.WriteString("^")
			}
			for _, r := range class {
				if r == '\\' || r == '[' || r == ']' || r == '^' {
					sb.WriteString(`\`)
				}
				sb.WriteRune(r)
			}
			sb.WriteString("]")
			i += j + 1
		default:
			sb.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	sb.WriteString("$")
	return regexp.Compile(sb.String())
}

// empty reports whether no pattern was given.
func (g globs) empty() bool { return len(g.res) == 0 }

// match reports whether name matches one of the patterns.
func (g globs) match(name string) bool {
	for _, re := range g.res {
		if re.MatchString(name) {
			return true
		}
	}
	if g.aliases {
		if a, ok := llamanames.ToGGUF(name); ok && g.matchPlain(a) {
			return true
		}
		if a, ok := llamanames.ToHF(name); ok && g.matchPlain(a) {
			return true
		}
	}
	return false
}

func (g globs) matchPlain(name string) bool {
	for _, re := range g.res {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// matchOrAll is match, or true when there are no patterns.
func (g globs) matchOrAll(name string) bool { return g.empty() || g.match(name) }
