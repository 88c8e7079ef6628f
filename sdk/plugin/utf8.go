package plugin

import (
	"fmt"
	"unicode/utf8"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// checkWireStrings reports the first string of m that is not valid UTF-8:
// the protocol carries names, metadata strings and attributes as protobuf
// strings, which must be UTF-8, so such a manifest cannot cross it. The
// error blames the input (a checkpoint with, say, a vocabulary of raw bytes)
// instead of failing as an internal marshalling error.
func checkWireStrings(m *tensor.Manifest) error {
	// Name the file when the manifest says where its tensors lie (the
	// metadata comes from the same file, or the first of a set).
	file := ""
	for i := range m.Tensors {
		if l := m.Tensors[i].Location; l != nil && utf8.ValidString(l.Path) {
			file = l.Path
			break
		}
	}
	bad := func(what string) error {
		return &InputError{File: file, Msg: what + " is not valid UTF-8, which the plugin protocol needs for strings"}
	}
	var err error
	m.Metadata.All(func(k string, v tensor.Value) bool {
		if !utf8.ValidString(k) {
			err = bad(fmt.Sprintf("metadata key %q", k))
		} else if e := checkValueStrings(v); e != "" {
			err = bad(fmt.Sprintf("metadata key %q: %s", k, e))
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	for i := range m.Tensors {
		t := &m.Tensors[i]
		if !utf8.ValidString(t.Name) {
			return bad(fmt.Sprintf("tensor name %q", t.Name))
		}
		if !utf8.ValidString(string(t.DType)) {
			return &InputError{File: file, Tensor: t.Name, Msg: fmt.Sprintf("dtype %q is not valid UTF-8", t.DType)}
		}
		for k, v := range t.Attrs {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return &InputError{File: file, Tensor: t.Name, Msg: fmt.Sprintf("attribute %q = %q is not valid UTF-8", k, v)}
			}
		}
		if t.Location != nil && !utf8.ValidString(t.Location.Path) {
			return &InputError{Tensor: t.Name, Msg: fmt.Sprintf("file path %q is not valid UTF-8", t.Location.Path)}
		}
	}
	return nil
}

// checkValueStrings describes the first string in v that is not valid
// UTF-8, or returns "".
func checkValueStrings(v tensor.Value) string {
	if s, ok := v.Str(); ok && !utf8.ValidString(s) {
		return fmt.Sprintf("the value %q", s)
	}
	for i, s := range v.Strings() {
		if !utf8.ValidString(s) {
			return fmt.Sprintf("element %d, %q", i, s)
		}
	}
	if items, ok := v.Items(); ok {
		for i, it := range items {
			if e := checkValueStrings(it); e != "" {
				return fmt.Sprintf("item %d: %s", i, e)
			}
		}
	}
	return ""
}
