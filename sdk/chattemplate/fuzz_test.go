package chattemplate

import "testing"

// FuzzParse feeds arbitrary templates to Parse and renders what parses: no
// panics, whatever the template. Seeds: testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add(`{{ 'a' + ('x' if c else 'y') }}`)
	f.Fuzz(func(t *testing.T, src string) {
		tpl, err := Parse(src)
		if err != nil {
			return
		}
		_, _ = tpl.Render(Input{
			Messages:            []any{map[string]any{"role": "user", "content": "hi"}},
			AddGenerationPrompt: true,
			BOSToken:            "<s>",
			Vars:                map[string]any{"c": true},
		})
	})
}

// FuzzParseJSON checks that ParseJSON never panics.
func FuzzParseJSON(f *testing.F) {
	f.Add([]byte(`[{"role": "user", "content": "hi", "n": 1.5}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseJSON(data)
	})
}
