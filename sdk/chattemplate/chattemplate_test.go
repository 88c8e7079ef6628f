package chattemplate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := ParseJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRender runs small templates written for these tests. The expected
// strings are what Jinja gives (checked with @huggingface/jinja, and Python
// semantics where the two differ, such as printing True).
func TestRender(t *testing.T) {
	cases := []struct {
		name string
		src  string
		vars map[string]any
		in   Input
		want string
	}{
		{"conditional in parentheses", `{{ 'a' + ('x' if c else 'y') + 'b' }}`, map[string]any{"c": true}, Input{}, "axb"},
		{"conditional in parentheses, false", `{{ 'a' + ('x' if c else 'y') + 'b' }}`, map[string]any{"c": false}, Input{}, "ayb"},
		{"filtered conditional", `{{ ('x' if c else 'y') | upper }}`, map[string]any{"c": true}, Input{}, "X"},
		{"chained conditional in set", `{% set v = 'p' if c else 'q' if d else 'r' %}{{ v }}`, map[string]any{"c": false, "d": true}, Input{}, "q"},
		{"conditional in if", `{% if ('x' if c else '') %}T{% elif ('' if c else 'y') == 'y' %}E{% else %}F{% endif %}`, map[string]any{"c": true}, Input{}, "T"},
		{"conditional in elif", `{% if ('x' if c else '') %}T{% elif ('' if c else 'y') == 'y' %}E{% else %}F{% endif %}`, map[string]any{"c": false}, Input{}, "E"},
		{"untaken branch not evaluated", `{{ (m.missing.deep if false else 'safe') }}`, map[string]any{"m": map[string]any{}}, Input{}, "safe"},
		{"falsy branch kept", `{{ ([] if c else 'no') | length }}`, map[string]any{"c": true}, Input{}, "0"},
		{"conditional in list", `{{ ['a' if c else 'b', 'z'] | join(',') }}`, map[string]any{"c": true}, Input{}, "a,z"},
		{"conditional in dict", `{{ {'k': 1 if c else 2}['k'] }}`, map[string]any{"c": false}, Input{}, "2"},
		{"loop filter untouched", `{% for x in [1, 2, 3] if x > 1 %}{{ x }}{% endfor %}`, nil, Input{}, "23"},
		{"string untouched", `{{ "a if b else c" }}`, nil, Input{}, "a if b else c"},
		{"tojson keeps key order", `{{ tools | tojson }}`, nil,
			Input{Tools: []any{mustJSON(t, `{"b": 1, "a": "é\"\n<>&\u0001", "c": [1.5, true, null]}`)}},
			`[{"b": 1, "a": "é\"\n<>&\u0001", "c": [1.5, true, null]}]`},
		{"tojson indent", `{{ tools[0] | tojson(indent=2) }}`, nil,
			Input{Tools: []any{mustJSON(t, `{"b": 1, "a": [], "c": [1, {}]}`)}},
			"{\n  \"b\": 1,\n  \"a\": [],\n  \"c\": [\n    1,\n    {}\n  ]\n}"},
		{"map keys sorted", `{{ messages[0] | tojson }}`, nil,
			Input{Messages: []any{map[string]any{"role": "user", "content": "hi"}}}, `{"content": "hi", "role": "user"}`},
		{"trim and lstrip blocks", "{%- for m in messages -%}\n  {{ m.role }}: {{ m.content | trim }}\n{% endfor -%}\n{% if add_generation_prompt %}assistant:{% endif %}", nil,
			Input{Messages: mustJSON(t, `[{"role": "user", "content": " hi "}, {"role": "assistant", "content": "yo"}]`).([]any), AddGenerationPrompt: true},
			"user: hi\nassistant: yo\nassistant:"},
		{"namespace, slices, methods", `{% set ns = namespace(n=0) %}{% for m in messages[::-1] %}{% if m.role == 'user' and ns.n == 0 %}{% set ns.n = loop.index0 %}{% endif %}{% endfor %}{{ ns.n }}|{{ messages[1:] | length }}|{{ messages[-1].content.startswith('y') }}`, nil,
			Input{Messages: mustJSON(t, `[{"role": "user", "content": "a"}, {"role": "assistant", "content": "yo"}]`).([]any)}, "1|1|True"},
		{"special tokens and tools none", `{{ bos_token }}{{ tools is none }}{{ documents is none }}{{ eos_token }}`, nil, Input{BOSToken: "<s>", EOSToken: "</s>"}, "<s>TrueTrue</s>"},
		{"strftime_now", `{{ strftime_now('%d %b %Y, %A %-d %H:%M %%') }}`, nil,
			Input{Now: time.Date(2024, 7, 5, 9, 3, 0, 0, time.UTC)}, "05 Jul 2024, Friday 5 09:03 %"},
		{"vars", `{% if enable_thinking is defined and enable_thinking is false %}off{% endif %}`, map[string]any{"enable_thinking": false}, Input{}, "off"},
	}
	for _, c := range cases {
		tpl, err := Parse(c.src)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		in := c.in
		if c.vars != nil {
			in.Vars = c.vars
		}
		got, err := tpl.Render(in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s:\n got  %q\n want %q", c.name, got, c.want)
		}
	}
}

func TestRaiseException(t *testing.T) {
	tpl, err := Parse(`{% if messages | length == 0 %}{{ raise_exception('no messages!') }}{% endif %}ok`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.Render(Input{})
	var re *RaiseError
	if !errors.As(err, &re) || re.Message != "no messages!" {
		t.Fatalf("got %v, want RaiseError(no messages!)", err)
	}
	if got, err := tpl.Render(Input{Messages: []any{map[string]any{"role": "user"}}}); err != nil || got != "ok" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestParseError(t *testing.T) {
	src := "{% for m in messages %}{{ m.content }}" + strings.Repeat("x", 200)
	_, err := Parse(src)
	if err == nil {
		t.Fatal("want a parse error for a for without endfor")
	}
	if strings.Contains(err.Error(), strings.Repeat("x", 200)) {
		t.Errorf("the error quotes the whole template: %v", err)
	}
}

func TestRewriteLeavesOtherSyntaxAlone(t *testing.T) {
	for _, src := range []string{
		`plain { text } with braces`,
		`{# a comment with (x if y else z) #}{{ a }}`,
		`{% raw %}{{ ('x' if c else 'y') }}{% endraw %}`,
		`{% for x in xs if x.ok %}{{ x }}{% endfor %}`,
		`{{ "quoted (a if b else c)" }}`,
		`{{ x if y else z }}{% set v = 1 %}`,
	} {
		got := rewriteConditionals(src)
		if strings.Contains(src, "{{ x if y else z }}") {
			if got != `{{ ((y) and [x] or [z])[0] }}{% set v = 1 %}` {
				t.Errorf("rewrite(%q) = %q", src, got)
			}
			continue
		}
		if got != src {
			t.Errorf("rewrite(%q) = %q, want it unchanged", src, got)
		}
	}
}

func TestFromTokenizerConfig(t *testing.T) {
	s, err := FromTokenizerConfig([]byte(`{"bos_token": {"content": "<s>"}, "eos_token": "</s>",
		"chat_template": [{"name": "default", "template": "D{{ bos_token }}"}, {"name": "tool_use", "template": "T"}, {"name": "rag", "template": "{% if %}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.BOSToken != "<s>" || s.EOSToken != "</s>" || strings.Join(s.Names(), ",") != "tool_use,rag" || !s.HasDefault() {
		t.Fatalf("set: bos %q eos %q names %v default %v", s.BOSToken, s.EOSToken, s.Names(), s.HasDefault())
	}
	def, err := s.Template("")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := def.Render(Input{BOSToken: s.BOSToken}); got != "D<s>" {
		t.Errorf("default renders %q", got)
	}
	if _, err := s.Template("rag"); err == nil || !strings.Contains(err.Error(), `template "rag"`) {
		t.Errorf("broken named template: %v", err)
	}
	if _, err := s.Template("nope"); !errors.Is(err, ErrNoTemplate) {
		t.Errorf("missing template: %v", err)
	}
	none, err := FromTokenizerConfig([]byte(`{"bos_token": "<s>"}`))
	if err != nil || none.HasDefault() {
		t.Fatalf("config without template: %v %v", none, err)
	}
	if _, err := none.Template(""); !errors.Is(err, ErrNoTemplate) {
		t.Errorf("no default: %v", err)
	}
}

func TestFromGGUF(t *testing.T) {
	md := &tensor.Metadata{}
	md.Set("tokenizer.ggml.tokens", tensor.StringArray([]string{"<unk>", "<s>", "</s>"}))
	md.Set("tokenizer.ggml.bos_token_id", tensor.U32Value(1))
	md.Set("tokenizer.ggml.eos_token_id", tensor.U32Value(2))
	md.Set("tokenizer.chat_template.tool_use", tensor.StringValue("T"))
	md.Set("tokenizer.chat_templates", tensor.StringArray([]string{"tool_use"}))
	md.Set("tokenizer.chat_template", tensor.StringValue("{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"))
	s, err := FromGGUF(md)
	if err != nil {
		t.Fatal(err)
	}
	if s.BOSToken != "<s>" || s.EOSToken != "</s>" || strings.Join(s.Names(), ",") != "tool_use" {
		t.Fatalf("set: %q %q %v", s.BOSToken, s.EOSToken, s.Names())
	}
	tpl, err := s.Template("default")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tpl.Render(Input{Messages: []any{map[string]any{"role": "user", "content": "hi"}}, BOSToken: s.BOSToken, EOSToken: s.EOSToken})
	if err != nil || got != "<s>hi</s>" {
		t.Fatalf("render: %q %v", got, err)
	}
}
