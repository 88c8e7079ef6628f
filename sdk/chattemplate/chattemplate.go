// Package chattemplate renders a checkpoint's own chat template, the Jinja
// program that turns a list of messages into the prompt text the model was
// trained on. The template is read from GGUF metadata
// (tokenizer.chat_template and named tokenizer.chat_template.<name>) or from
// a Hugging Face tokenizer_config.json (chat_template as a string or a list
// of {name, template}); the package opens no files.
//
// Templates run on gonja with the settings Hugging Face transformers uses
// (trim_blocks and lstrip_blocks on) and the names transformers provides:
// messages, add_generation_prompt, tools, documents, bos_token, eos_token,
// raise_exception, strftime_now, and a tojson filter that writes JSON as
// Python's json.dumps does. Conditional expressions nested inside other
// expressions, which gonja cannot parse, are rewritten into an equivalent
// form before parsing.
package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// Template is a parsed chat template. It is safe for concurrent use.
type Template struct {
	source string
	tpl    *exec.Template
}

// Input is what a template is rendered with.
type Input struct {
	// Messages are the conversation, each a map with "role" and "content"
	// (a string, or a list of parts such as {"type": "text", "text": …})
	// and whatever else the template reads ("tool_calls",
	// "reasoning_content", …). Use ParseJSON to keep the key order of JSON
	// objects, which tojson shows; a map[string]any is given to the template
	// with its keys sorted.
	Messages []any
	// AddGenerationPrompt asks the template to end with the header of an
	// assistant turn.
	AddGenerationPrompt bool
	// Tools and Documents are passed as tools and documents; nil is passed as
	// none, as transformers does.
	Tools, Documents []any
	// BOSToken and EOSToken are the text of the checkpoint's special tokens
	// (bos_token and eos_token).
	BOSToken, EOSToken string
	// Vars are further variables, for example "enable_thinking": false for
	// Qwen 3 or other special tokens ("unk_token", "pad_token").
	Vars map[string]any
	// Now is the time strftime_now formats; the zero value means time.Now().
	Now time.Time
}

// RaiseError is the error of a template that called raise_exception.
type RaiseError struct {
	Message string
}

// Error returns the message with a prefix saying where it came from.
func (e *RaiseError) Error() string { return "chat template raised an exception: " + e.Message }

// ErrNoTemplate is returned for a template a checkpoint does not have.
var ErrNoTemplate = errors.New("no chat template")

// Parse parses a chat template.
func Parse(source string) (t *Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("parse chat template: template engine failure: %v", r)
		}
	}()
	env := environment()
	loader, err := loaders.NewMemoryLoader(map[string]string{"/chat_template": rewriteConditionals(source)})
	if err != nil {
		return nil, err
	}
	cfg := config.New()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = true
	tpl, err := exec.NewTemplate("/chat_template", cfg, loader, env)
	if err != nil {
		return nil, fmt.Errorf("parse chat template: %s", trimSourceFromError(err.Error()))
	}
	return &Template{source: source, tpl: tpl}, nil
}

// trimSourceFromError drops the template text gonja quotes in its parse
// errors ("failed to parse template '<whole template>': reason").
func trimSourceFromError(msg string) string {
	const prefix = "failed to parse template '"
	if strings.HasPrefix(msg, prefix) {
		if k := strings.LastIndex(msg, "': "); k >= 0 {
			return msg[k+3:]
		}
	}
	return msg
}

// Source returns the template text as the checkpoint wrote it.
func (t *Template) Source() string { return t.source }

// Render runs the template.
func (t *Template) Render(in Input) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("render chat template: template engine failure: %v", r)
		}
	}()
	var raised *RaiseError
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	data := map[string]any{}
	for k, v := range in.Vars {
		data[k] = toTemplateValue(v)
	}
	msgs := make([]any, len(in.Messages))
	for i, m := range in.Messages {
		msgs[i] = toTemplateValue(m)
	}
	data["messages"] = msgs
	data["add_generation_prompt"] = in.AddGenerationPrompt
	data["tools"] = listOrNone(in.Tools)
	data["documents"] = listOrNone(in.Documents)
	data["bos_token"] = in.BOSToken
	data["eos_token"] = in.EOSToken
	data["raise_exception"] = func(_ *exec.Evaluator, params *exec.VarArgs) (any, error) {
		msg := ""
		if len(params.Args) > 0 {
			msg = params.Args[0].String()
		}
		raised = &RaiseError{Message: msg}
		return nil, raised
	}
	data["strftime_now"] = func(_ *exec.Evaluator, params *exec.VarArgs) (any, error) {
		if len(params.Args) != 1 || !params.Args[0].IsString() {
			return nil, errors.New("strftime_now takes one format string")
		}
		return strftime(now, params.Args[0].String()), nil
	}
	ctx := exec.EmptyContext().Update(baseContext()).Update(exec.NewContext(data))
	out, err = t.tpl.ExecuteToString(ctx)
	if raised != nil {
		return "", raised
	}
	if err != nil {
		return "", fmt.Errorf("render chat template: %w", err)
	}
	return out, nil
}

func listOrNone(l []any) any {
	if l == nil {
		return nil
	}
	out := make([]any, len(l))
	for i, v := range l {
		out[i] = toTemplateValue(v)
	}
	return out
}

var (
	envOnce sync.Once
	env     *exec.Environment
	baseCtx *exec.Context
)

// environment is gonja's standard environment with transformers' tojson.
func environment() *exec.Environment {
	envOnce.Do(func() {
		filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
		if err := filters.Replace("tojson", toJSONFilter); err != nil {
			panic(err) // gonja without a tojson filter: a build problem, not input
		}
		env = &exec.Environment{
			Context:           exec.EmptyContext(),
			Filters:           filters,
			Tests:             builtins.Tests,
			ControlStructures: builtins.ControlStructures,
			Methods:           builtins.Methods,
		}
		baseCtx = exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
	})
	return env
}

func baseContext() *exec.Context {
	environment()
	return baseCtx
}

// Set is the chat templates of a checkpoint: the default one and named ones
// (such as "tool_use"), with the special tokens templates are given.
type Set struct {
	// BOSToken and EOSToken are the checkpoint's special token texts, for
	// Input.
	BOSToken, EOSToken string

	sources map[string]string // "" is the default template
	names   []string
	mu      sync.Mutex
	parsed  map[string]*Template
}

// Names returns the names of the named templates, in the checkpoint's order.
func (s *Set) Names() []string { return s.names }

// HasDefault reports whether the checkpoint has a default template.
func (s *Set) HasDefault() bool {
	_, ok := s.sources[""]
	return ok
}

// Template returns the template of that name; "" (or "default") is the
// default template. A template is parsed on first use.
func (s *Set) Template(name string) (*Template, error) {
	if name == "default" {
		name = ""
	}
	src, ok := s.sources[name]
	if !ok {
		if name == "" {
			return nil, fmt.Errorf("%w: the checkpoint has no default chat template", ErrNoTemplate)
		}
		return nil, fmt.Errorf("%w named %q (the checkpoint has: %s)", ErrNoTemplate, name, strings.Join(s.names, ", "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.parsed[name]; ok {
		return t, nil
	}
	t, err := Parse(src)
	if err != nil {
		if name == "" {
			return nil, err
		}
		return nil, fmt.Errorf("template %q: %w", name, err)
	}
	if s.parsed == nil {
		s.parsed = map[string]*Template{}
	}
	s.parsed[name] = t
	return t, nil
}

func (s *Set) add(name, source string) {
	if s.sources == nil {
		s.sources = map[string]string{}
	}
	if name != "" {
		if _, dup := s.sources[name]; !dup {
			s.names = append(s.names, name)
		}
	}
	s.sources[name] = source
}

// FromTokenizerConfig reads the chat template(s) and special tokens of a
// Hugging Face tokenizer_config.json. A checkpoint without a template gives a
// Set without a default.
func FromTokenizerConfig(data []byte) (*Set, error) {
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOSToken     json.RawMessage `json:"bos_token"`
		EOSToken     json.RawMessage `json:"eos_token"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: %w", err)
	}
	s := &Set{BOSToken: tokenText(cfg.BOSToken), EOSToken: tokenText(cfg.EOSToken)}
	raw := strings.TrimSpace(string(cfg.ChatTemplate))
	if raw == "" || raw == "null" {
		return s, nil
	}
	var str string
	if json.Unmarshal(cfg.ChatTemplate, &str) == nil {
		s.add("", str)
		return s, nil
	}
	var list []struct {
		Name     string  `json:"name"`
		Template *string `json:"template"`
	}
	if err := json.Unmarshal(cfg.ChatTemplate, &list); err != nil {
		return nil, errors.New("tokenizer_config.json: chat_template is neither a string nor a list of {name, template}")
	}
	for _, e := range list {
		if e.Template == nil || e.Name == "" {
			continue
		}
		if e.Name == "default" {
			s.add("", *e.Template)
		} else {
			s.add(e.Name, *e.Template)
		}
	}
	return s, nil
}

// tokenText reads a special token field: a string or an object with "content".
func tokenText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.Content
	}
	return ""
}
