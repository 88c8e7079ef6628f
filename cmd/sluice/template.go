package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-ml/sluice/sdk/chattemplate"
)

// templateSchema names the version of template's --json output.
const templateSchema = "sluice.template/v1"

type templateFlags struct {
	messages            string
	addGenerationPrompt bool
	name                string
	vars                []string
	tokenize            bool
	now                 string
	isolate             bool
}

func (a *app) templateCommand() *cobra.Command {
	var tf templateFlags
	cmd := &cobra.Command{
		Use:   "template CHECKPOINT",
		Short: "Show or render a checkpoint's own chat template",
		Long: `template reads the chat template a checkpoint carries: a GGUF file's
tokenizer.chat_template (and named tokenizer.chat_template.NAME), or a Hugging
Face tokenizer_config.json's chat_template (a string or a list of named
templates). Only headers are read.

Without --messages it prints the template's source. With --messages FILE (a
JSON file, "-" for standard input) it renders the template as Hugging Face
transformers does (trim_blocks, lstrip_blocks; bos_token, eos_token,
raise_exception, strftime_now, tojson) and prints the prompt text exactly,
with no line break added. FILE holds a list of messages, or an object with
"messages" and optionally "tools", "documents", "add_generation_prompt" and
further variables:

  [{"role": "user", "content": "Hello!"}]
  {"messages": [...], "tools": [...], "enable_thinking": false}

--tokenize prints the token ids of the rendered prompt instead (encoded
without adding BOS/EOS again: the template writes them).`,
		Example: `  sluice template model.gguf
  sluice template ./Llama-3-8B --messages chat.json --add-generation-prompt
  echo '[{"role":"user","content":"Hi"}]' | sluice template model.gguf --messages - --tokenize
  sluice template ./Qwen3-8B --messages chat.json --var enable_thinking=false`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runTemplate(cmd, args[0], tf)
		},
	}
	f := cmd.Flags()
	f.StringVar(&tf.messages, "messages", "", "render these messages: a JSON file (\"-\" for standard input)")
	f.BoolVar(&tf.addGenerationPrompt, "add-generation-prompt", false, "end the prompt with the header of an assistant turn")
	f.StringVar(&tf.name, "name", "", "use the named template (such as tool_use) instead of the default")
	f.StringArrayVar(&tf.vars, "var", nil, "set a template variable: NAME=VALUE, VALUE as JSON when it parses, else a string (repeatable)")
	f.BoolVar(&tf.tokenize, "tokenize", false, "print the token ids of the rendered prompt")
	f.StringVar(&tf.now, "now", "", "the time strftime_now formats, RFC 3339 (default: the current time)")
	f.BoolVar(&tf.isolate, "isolate", false, "run format plugins as their own processes instead of inside sluice")
	return cmd
}

func (a *app) runTemplate(cmd *cobra.Command, arg string, tf templateFlags) error {
	h := a.inspectHost(tf.isolate)
	defer h.Close()
	vs, err := loadVocab(cmd.Context(), h, arg)
	if err != nil {
		return err
	}
	set, err := vs.Templates()
	if err != nil {
		return err
	}
	tpl, err := set.Template(tf.name)
	if err != nil {
		hint := ""
		if names := set.Names(); len(names) > 0 {
			hint = "named templates: " + strings.Join(names, ", ")
		}
		return &inputError{path: arg, err: err, hint: hint}
	}
	if tf.messages == "" {
		if a.json {
			return writeJSON(a.stdout, map[string]any{"schema": templateSchema, "from": vs.From, "name": tf.name, "names": nonNilStrings(set.Names()), "template": tpl.Source(), "bos_token": set.BOSToken, "eos_token": set.EOSToken})
		}
		_, err := io.WriteString(a.stdout, tpl.Source())
		if !strings.HasSuffix(tpl.Source(), "\n") {
			fmt.Fprintln(a.stdout)
		}
		return err
	}
	in, err := readMessages(cmd.InOrStdin(), tf.messages)
	if err != nil {
		return err
	}
	in.BOSToken, in.EOSToken = set.BOSToken, set.EOSToken
	if tf.addGenerationPrompt {
		in.AddGenerationPrompt = true
	}
	for _, kv := range tf.vars {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return configErr(fmt.Errorf("--var %q: want NAME=VALUE", kv))
		}
		if in.Vars == nil {
			in.Vars = map[string]any{}
		}
		if parsed, err := chattemplate.ParseJSON([]byte(v)); err == nil {
			in.Vars[k] = parsed
		} else {
			in.Vars[k] = v
		}
	}
	if tf.now != "" {
		t, err := time.Parse(time.RFC3339, tf.now)
		if err != nil {
			return configErr(fmt.Errorf("--now: %v", err))
		}
		in.Now = t
	}
	out, err := tpl.Render(*in)
	if err != nil {
		return &inputError{path: arg, err: err}
	}
	var ids []int32
	if tf.tokenize {
		tok, err := vs.Tokenizer()
		if err != nil {
			return err
		}
		ids = nonNilIDs(tok.Encode(out, false))
	}
	if a.json {
		r := map[string]any{"schema": templateSchema, "from": vs.From, "name": tf.name, "add_generation_prompt": in.AddGenerationPrompt, "rendered": out}
		if tf.tokenize {
			r["ids"] = ids
		}
		return writeJSON(a.stdout, r)
	}
	if tf.tokenize {
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = fmt.Sprint(id)
		}
		fmt.Fprintln(a.stdout, strings.Join(parts, " "))
		return nil
	}
	_, err = io.WriteString(a.stdout, out)
	return err
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// readMessages reads --messages, "-" for stdin: a JSON list of messages or
// an object with messages and other inputs (chattemplate.ParseInput).
func readMessages(stdin io.Reader, file string) (*chattemplate.Input, error) {
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(io.LimitReader(stdin, maxTokenizerFile))
	} else {
		b, err = readLimited(file)
	}
	if err != nil {
		return nil, configErr(fmt.Errorf("--messages: %w", err))
	}
	in, err := chattemplate.ParseInput(b)
	if err != nil {
		return nil, configErr(fmt.Errorf("--messages %s: %v", file, err))
	}
	return in, nil
}
