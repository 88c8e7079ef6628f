package tensor

import "path"

// Selection is the value of a source's "only" attribute: tensor names or
// path.Match globs ("model.layers.0.*"). A source reads the tensors whose
// names match at least one pattern and leaves the others out of its
// manifest; an empty Selection selects every tensor.
//
// A source checks the patterns when it is configured (Check), asks Selects
// (or Mark, to learn which patterns matched) for each tensor it lists, and
// may refuse patterns that matched nothing (Unmatched).
type Selection []string

// Check returns the first pattern path.Match refuses, with its error
// (path.ErrBadPattern); "" and nil when every pattern is well formed.
func (s Selection) Check() (pattern string, err error) {
	for _, p := range s {
		if _, err := path.Match(p, ""); err != nil {
			return p, err
		}
	}
	return "", nil
}

// Selects reports whether name matches one of the patterns, or s is empty.
func (s Selection) Selects(name string) bool { return s.Mark(name, nil) }

// Mark is Selects that also sets matched[i] for every pattern i that
// matches name. matched is nil or has one entry per pattern.
func (s Selection) Mark(name string, matched []bool) bool {
	if len(s) == 0 {
		return true
	}
	hit := false
	for i, p := range s {
		if ok, _ := path.Match(p, name); ok {
			hit = true
			if matched == nil {
				break
			}
			matched[i] = true
		}
	}
	return hit
}

// Unmatched returns, in order, the patterns whose entry of matched (as Mark
// filled it) is false.
func (s Selection) Unmatched(matched []bool) []string {
	var out []string
	for i, ok := range matched {
		if !ok {
			out = append(out, s[i])
		}
	}
	return out
}
