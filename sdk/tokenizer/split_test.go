package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// splitterAlphabet covers every class the regexes distinguish: ASCII and
// non-ASCII letters, marks, numbers of the three kinds, the apostrophe and
// contraction letters, punctuation and symbols, each kind of whitespace
// (including U+0085, U+00A0 and U+3000, and U+FEFF which is not a space),
// CJK, emoji with joiners, and invalid UTF-8 is left out (regexp2 and the
// splitter count it the same way, but the oracle is about valid text).
var splitterAlphabet = []string{
	"a", "b", "s", "t", "r", "e", "v", "m", "l", "d", "S", "T", "R", "E", "V", "M", "L", "D", "x", "Z",
	"'", "'", "'", " ", " ", " ", "  ", "\t", "\n", "\r", "\r\n", "\v", "\f", "\u0085", "\u00a0", "\u3000", "\u2028", "\u2009", "\ufeff",
	"0", "1", "7", "9", "٣", "Ⅲ", "½", "²",
	".", ",", "!", "?", "-", "_", "(", ")", "\"", "/", "$", "+", "<", ">", "|", "~", "`", "@", "#", "…", "。", "，", "、", "×", "€",
	"é", "ß", "İ", "Ω", "ж", "ا", "क", "\u0301", "\u0308", "\u093f", "é",
	"一", "龥", "ぁ", "カ", "한", "中", "文",
	"😀", "\u200d", "🦙", "\ufe0f", "\u200b",
}

func randomSplitterText(r *rand.Rand) string {
	var sb strings.Builder
	n := r.IntN(24)
	for i := 0; i < n; i++ {
		sb.WriteString(splitterAlphabet[r.IntN(len(splitterAlphabet))])
	}
	return sb.String()
}

func collect(st stage, s string) []string {
	var out []string
	st.split(s, true, func(p string, _ bool) { out = append(out, p) })
	return out
}

// TestFastSplittersMatchRegexp2 checks each hand-written splitter against
// regexp2 running the regex it replaces.
func TestFastSplittersMatchRegexp2(t *testing.T) {
	exprs := []string{regexGPT2, regexLlama3, regexQwen2, regexQwen35, `\p{N}`, `\p{N}{1,3}`, `\p{N}+`}
	extra := []string{
		"", "'s", "'S", "'re'VE'Ll'd'x", "Hello world", "  Hello  world  ", "a\n\n b", " \n ", "x  \n\t y",
		"12345678", " 123", "Ⅲ½²٣٣٣٣", "e\u0301\u0301x", "\u0301abc", "do n't", "--> <!-- ", "a\r\n\r\nb\r",
		"\u3000\u3000x", "\u00a0x", "x\u0085\u0085", "\ufeff \ufeffx", "😀\u200d🦙", "tab\vvertical\fformfeed  \v x",
	}
	r := rand.New(rand.NewPCG(7, 11))
	for _, expr := range exprs {
		fast, err := regexStage(expr)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fast.(splitStage); ok {
			t.Fatalf("%q has no hand-written splitter", expr)
		}
		p, err := compileRegex(expr)
		if err != nil {
			t.Fatal(err)
		}
		oracle := splitStage{pat: p, behavior: behaviorIsolated}
		texts := append([]string(nil), extra...)
		for i := 0; i < 4000; i++ {
			texts = append(texts, randomSplitterText(r))
		}
		for _, text := range texts {
			got, want := collect(fast, text), collect(oracle, text)
			if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
				t.Fatalf("regex %q on %q:\n got  %q\n want %q", expr, text, got, want)
			}
		}
	}
}

// TestContractionLongS pins the one place the splitters differ from regexp2
// on purpose: under Unicode case folding (Oniguruma, JavaScript) the long s
// matches (?i:'s).
func TestContractionLongS(t *testing.T) {
	got := collect(fastStage{llama3Splitter}, "it'ſ")
	want := []string{"it", "'ſ"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("llama3 on \"it'ſ\": got %q, want %q", got, want)
	}
	// GPT-2's contractions are case-sensitive and ſ is not s: "'" then "ſ".
	got = collect(fastStage{gpt2Splitter}, "it'ſ")
	if strings.Join(got, "|") != "it|'|ſ" {
		t.Fatalf("gpt2 on \"it'ſ\": got %q, want [it ' ſ]", got)
	}
}

func TestNamedPreTokenizersCompile(t *testing.T) {
	for _, spec := range preTokenizerSpecs {
		sts, err := spec.stages()
		if err != nil {
			t.Fatalf("%s: %v", spec.names[0], err)
		}
		p := newPreTokenizer(sts)
		var pieces []string
		text := "Hello, world! It's 12345 apples — 東京タワー 😀\n\n  end"
		p.run(text, true, func(s string) { pieces = append(pieces, s) })
		if strings.Join(pieces, "") != text {
			t.Errorf("%s: pieces %q do not cover the text", spec.names[0], pieces)
		}
	}
}

func TestNamedPreTokenizerDigits(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []string
	}{
		{"llama-bpe", "12345 x", []string{"123", "45", " x"}},
		{"qwen2", "123 x", []string{"1", "2", "3", " x"}},
		{"smollm", "a12 ½", []string{"a", "1", "2", " ", "½"}},
		{"gpt-2", "a12 345", []string{"a", "12", " 345"}},
		{"qwen35", "cafe\u0301s", []string{"cafe\u0301s"}},
		{"llama-bpe", "cafe\u0301s", []string{"cafe", "\u0301s"}},
		{"deepseek-v3", "1234東京abc", []string{"123", "4", "東京", "abc"}},
	}
	for _, c := range cases {
		spec, err := lookupPreTokenizer(c.name)
		if err != nil {
			t.Fatal(err)
		}
		sts, err := spec.stages()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		newPreTokenizer(sts).run(c.text, true, func(s string) { got = append(got, s) })
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s on %q: got %q, want %q", c.name, c.text, got, c.want)
		}
	}
}

func TestUnknownPreTokenizer(t *testing.T) {
	if _, err := lookupPreTokenizer("no-such-thing"); err == nil || !strings.Contains(err.Error(), `"no-such-thing"`) {
		t.Fatalf("got %v, want an error naming the pre-tokenizer", err)
	}
	if _, err := lookupPreTokenizer("kimi-k2"); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("got %v, want a not-supported error", err)
	}
}
