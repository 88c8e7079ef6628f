package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/core/run"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

type convertFlags struct {
	dtype         string
	shard         string
	keys          keyFlags
	arch          string
	layout        string
	format        string
	printPipeline bool
	planOnly      bool
	fsync         bool
	keepCache     bool
}

// signingKeyVar is the sensitive variable that carries --key into the
// pipeline convert builds.
const signingKeyVar = "signing_key"

func (a *app) convertCommand() *cobra.Command {
	var cf convertFlags
	cmd := &cobra.Command{
		Use:   "convert IN OUT",
		Short: "Convert one checkpoint to another format (a one-stage pipeline built from flags)",
		Long: `convert detects the input format by content and picks the output format by the
output's file name (or --format). IN may be a file, an index, any shard of a
set or a Hugging Face directory.

It builds the pipeline a pipeline file would hold and runs it: --dtype
becomes the sink's dtype when the output format has one (gguf, safetensors),
else a quantize stage; --shard the sink's shard size when it has one (apsim),
else a shard stage (after a quantize stage for --dtype, so that shards are
measured in the output dtype); --key, --key-file or --user-key a sign stage (apsim embeds
the signature; other formats get NAME.sig beside each file). Formats that
cannot hold a dtype expand it (to f32) and say so in the plan.

--print-pipeline prints that pipeline as HCL instead of running it, so a
one-off conversion can become a scheduled job; --plan shows what would be
done, tensor by tensor, without writing anything. Keys never appear in
either: the pipeline reads them from the sensitive variable signing_key
(SLUICE_VAR_signing_key).`,
		Example: `  sluice convert model.safetensors model.gguf --dtype q4_0
  sluice convert model.gguf model.apsim --shard 2GB --key "team secret"
  sluice convert model.apsim model.safetensors
  sluice convert ./Llama-3-8B out/llama.gguf --arch auto --dtype q8_0
  sluice convert ./Llama-3-8B out/llama.gguf --arch auto --print-pipeline > llama.hcl`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			h := host.New(host.Options{Builtins: builtins, InProcess: true, PluginPath: host.SearchPath(os.Getenv(host.PluginPathEnv))})
			src, err := a.convertPipeline(cmd, h, args[0], args[1], cf)
			h.Close()
			if err != nil {
				return err
			}
			if cf.printPipeline {
				_, err := a.stdout.Write(src)
				return err
			}
			env := os.Environ()
			if cf.keys.key != "" {
				env = append(env, pipeline.EnvPrefix+signingKeyVar+"="+cf.keys.key)
			}
			return a.runConvert(cmd, src, env, &cf)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cf.dtype, "dtype", "", "output dtype: f32, f16, bf16, q8_0, q4_0, q4_K … (what the output format supports)")
	f.StringVar(&cf.shard, "shard", "", "split the output into shards of at most this size, e.g. 2GB or 512MiB")
	cf.keys.add(cmd, "sign the output")
	f.StringVar(&cf.arch, "arch", "", "GGUF architecture: a name, or auto to convert a Hugging Face checkpoint as llama.cpp does")
	f.StringVar(&cf.layout, "layout", "", "APR layout: aprender (default) or spec")
	f.StringVar(&cf.format, "format", "", "output format (sink type), when the file name does not tell")
	f.BoolVar(&cf.printPipeline, "print-pipeline", false, "print the equivalent pipeline as HCL instead of running it")
	f.BoolVar(&cf.planOnly, "plan", false, "show the plan (every per-tensor decision and output file) without writing anything")
	f.BoolVar(&cf.fsync, "fsync", true, "sync the output before renaming it into place (see sluice run --fsync)")
	f.BoolVar(&cf.keepCache, "keep-cache", false, "leave the output in the page cache as it is written (see sluice run --keep-cache)")
	cmd.RegisterFlagCompletionFunc("dtype", completeWords(dtypeNames()...))
	cmd.RegisterFlagCompletionFunc("format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, b := range builtins {
			for _, s := range b.New().Sinks {
				out = append(out, s.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
	cmd.RegisterFlagCompletionFunc("arch", completeWords("auto", "llama", "mistral", "qwen2", "qwen3"))
	cmd.RegisterFlagCompletionFunc("layout", completeWords("aprender", "spec"))
	cmd.RegisterFlagCompletionFunc("shard", completeWords("512MB", "1GB", "2GB", "4GB", "5GB"))
	return cmd
}

// completeWords completes a flag from a fixed list.
func completeWords(words ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return words, cobra.ShellCompDirectiveNoFileComp
	}
}

// dtypeNames lists what --dtype accepts: registry dtypes and apsim QTensor
// format names.
func dtypeNames() []string {
	names := []string{"int8", "int4", "fp8", "fp8_e5m2", "fp6", "fp4", "qt_bf16"}
	for _, n := range tensor.Names() {
		if !strings.HasPrefix(n, "qt_") {
			names = append(names, n)
		}
	}
	return names
}

// convertPipeline writes the pipeline a convert command stands for.
func (a *app) convertPipeline(cmd *cobra.Command, h *host.Host, in, out string, cf convertFlags) ([]byte, error) {
	in, _ = resolveInput(in)
	srcType, err := detectSource(cmd.Context(), h, in)
	if err != nil {
		return nil, err
	}
	sinkType := cf.format
	if sinkType == "" {
		if sinkType, err = sinkForPath(h, out); err != nil {
			return nil, err
		}
	}
	_, sinkInfo, ok := h.Provider(pipeline.Sink, sinkType)
	if !ok {
		return nil, configErr(fmt.Errorf("--format: no plugin writes %q (sinks: %s)", sinkType, strings.Join(h.Types(pipeline.Sink), ", ")))
	}
	sinkSchema, _ := sinkInfo.Sink(sinkType)
	has := func(attr string) bool { _, ok := sinkSchema.Schema.Attribute(attr); return ok }
	nkeys := cf.keys.count()
	if nkeys > 1 {
		return nil, configErr(errors.New("give one of --key, --key-file and --user-key"))
	}

	f := hclwrite.NewEmptyFile()
	body := f.Body()
	comment := func(s string) {
		body.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte("# " + s + "\n")}})
	}
	comment("Written by: " + convertCommandLine(in, out, cf))
	if cf.keys.key != "" {
		comment("The signing key is read from the sensitive variable signing_key:")
		comment("set SLUICE_VAR_signing_key in the environment, or pass -var signing_key=….")
	}
	body.AppendNewline()
	for _, v := range []struct{ name, path, doc string }{{"input", in, "The checkpoint to read."}, {"output", out, "The file to write."}} {
		vb := body.AppendNewBlock("variable", []string{v.name}).Body()
		vb.SetAttributeRaw("type", hclwrite.TokensForIdentifier("string"))
		vb.SetAttributeValue("default", cty.StringVal(absPath(v.path)))
		vb.SetAttributeValue("description", cty.StringVal(v.doc))
		body.AppendNewline()
	}
	if cf.keys.key != "" {
		v := body.AppendNewBlock("variable", []string{signingKeyVar}).Body()
		v.SetAttributeRaw("type", hclwrite.TokensForIdentifier("string"))
		v.SetAttributeValue("sensitive", cty.True)
		v.SetAttributeValue("description", cty.StringVal("HMAC-SHA256 key the outputs are signed with."))
		body.AppendNewline()
	}
	sb := body.AppendNewBlock("source", []string{srcType, "in"}).Body()
	sb.SetAttributeTraversal("path", traversal("var.input"))
	body.AppendNewline()
	input := "source.in"
	sinkAttrs := map[string]cty.Value{}
	// A shard stage measures the tensors it sees; when the sink converts
	// them (--dtype), a quantize stage before it converts them first, so
	// the shards come out at the size asked for.
	shardStage := cf.shard != "" && !has("shard")
	if cf.dtype != "" {
		if has("dtype") {
			sinkAttrs["dtype"] = cty.StringVal(cf.dtype)
		}
		if !has("dtype") || shardStage {
			tb := body.AppendNewBlock("transform", []string{"quantize", "dtype"}).Body()
			tb.SetAttributeTraversal("input", traversal(input))
			tb.SetAttributeValue("type", cty.StringVal(cf.dtype))
			body.AppendNewline()
			input = "transform.dtype"
		}
	}
	if cf.shard != "" {
		if !shardStage {
			sinkAttrs["shard"] = cty.StringVal(cf.shard)
		} else {
			tb := body.AppendNewBlock("transform", []string{"shard", "shards"}).Body()
			tb.SetAttributeTraversal("input", traversal(input))
			tb.SetAttributeValue("max_size", cty.StringVal(cf.shard))
			body.AppendNewline()
			input = "transform.shards"
		}
	}
	if nkeys == 1 {
		tb := body.AppendNewBlock("transform", []string{"sign", "key"}).Body()
		tb.SetAttributeTraversal("input", traversal(input))
		switch {
		case cf.keys.key != "":
			tb.SetAttributeTraversal("key", traversal("var."+signingKeyVar))
		case cf.keys.keyFile != "":
			tb.SetAttributeValue("key_file", cty.StringVal(absPath(cf.keys.keyFile)))
		default:
			tb.SetAttributeValue("user_key", cty.True)
		}
		body.AppendNewline()
		input = "transform.key"
	}
	for _, o := range []struct{ flag, value, attr string }{{"--arch", cf.arch, "architecture"}, {"--layout", cf.layout, "layout"}} {
		if o.value == "" {
			continue
		}
		if !has(o.attr) {
			return nil, configErr(fmt.Errorf("%s: the %s format has no %s option (it applies to %s)", o.flag, sinkType, o.attr, sinksWith(h, o.attr)))
		}
		sinkAttrs[o.attr] = cty.StringVal(o.value)
	}
	kb := body.AppendNewBlock("sink", []string{sinkType, "out"}).Body()
	kb.SetAttributeTraversal("input", traversal(input))
	kb.SetAttributeTraversal("path", traversal("var.output"))
	for _, k := range []string{"dtype", "shard", "architecture", "layout"} {
		if v, ok := sinkAttrs[k]; ok {
			kb.SetAttributeValue(k, v)
		}
	}
	return hclwrite.Format(f.Bytes()), nil
}

// convertCommandLine reconstructs the command, without the key's value.
func convertCommandLine(in, out string, cf convertFlags) string {
	parts := []string{"sluice", "convert", in, out}
	for _, o := range []struct{ flag, value string }{
		{"--dtype", cf.dtype}, {"--shard", cf.shard}, {"--arch", cf.arch}, {"--layout", cf.layout}, {"--format", cf.format}, {"--key-file", cf.keys.keyFile},
	} {
		if o.value != "" {
			parts = append(parts, o.flag, o.value)
		}
	}
	if cf.keys.key != "" {
		parts = append(parts, "--key", "…")
	}
	if cf.keys.userKey {
		parts = append(parts, "--user-key")
	}
	return strings.Join(parts, " ")
}

// sinksWith lists the sink types with an attribute.
func sinksWith(h *host.Host, attr string) string {
	var out []string
	for _, t := range h.Types(pipeline.Sink) {
		if _, info, ok := h.Provider(pipeline.Sink, t); ok {
			if c, ok := info.Sink(t); ok {
				if _, ok := c.Schema.Attribute(attr); ok {
					out = append(out, t)
				}
			}
		}
	}
	if len(out) == 0 {
		return "no format"
	}
	return strings.Join(out, ", ")
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// runConvert plans and runs the pipeline convert built. A stage's refusal
// of an option is reported against the flag that set it, not against the
// generated pipeline's line.
func (a *app) runConvert(cmd *cobra.Command, src []byte, env []string, cf *convertFlags) error {
	h, arena, heap, err := a.newHost()
	if err != nil {
		return err
	}
	pr := &prepared{h: h, arena: arena, heap: heap, noFsync: !cf.fsync, keepCache: cf.keepCache}
	defer pr.close()
	cwd, _ := os.Getwd()
	p, diags := pipeline.LoadSource("convert.hcl", src, cwd, pipeline.Options{Environ: env})
	a.noteSecrets(p)
	if !diags.HasErrors() {
		diags = append(diags, p.Decode(h)...)
		a.noteSecrets(p)
	}
	if diags.HasErrors() {
		a.printDiags(p, diags)
		return reported(exitBadConfig, diags)
	}
	pr.p = p
	if pr.sess, err = run.Open(cmd.Context(), p, h); err != nil {
		return convertError(err)
	}
	if pr.pl, err = pr.sess.Plan(cmd.Context()); err != nil {
		return convertError(err)
	}
	if cf.planOnly {
		if a.json {
			return writeJSON(a.stdout, planJSON(pr.pl))
		}
		printPlan(a.stdout, pr.pl)
		return nil
	}
	if err := a.execute(cmd.Context(), pr); err != nil {
		return convertError(err)
	}
	return nil
}

// convertFlagOf maps a stage attribute of the pipeline convert builds to
// the flag that set it.
var convertFlagOf = map[string]string{
	"sink.out/dtype":            "--dtype",
	"transform.dtype/type":      "--dtype",
	"sink.out/shard":            "--shard",
	"transform.shards/":         "--shard",
	"transform.shards/max_size": "--shard",
	"sink.out/architecture":     "--arch",
	"sink.out/layout":           "--layout",
	"sink.out/path":             "OUT",
	"source.in/path":            "IN",
	"transform.key/key":         "--key",
	"transform.key/key_file":    "--key-file",
	"transform.key/user_key":    "--user-key",
}

func convertError(err error) error {
	var se *plan.StageError
	if !errors.As(err, &se) {
		return err
	}
	var ce *plugin.ConfigError
	if errors.As(se.Err, &ce) {
		if flag, ok := convertFlagOf[se.Stage.Addr()+"/"+ce.Attribute]; ok {
			return configErr(fmt.Errorf("%s: %s", flag, ce.Msg))
		}
		return configErr(fmt.Errorf("%s: %s", se.Stage.Addr(), ce.Error()))
	}
	return err
}

// traversal builds a reference such as source.in for hclwrite.
func traversal(s string) hcl.Traversal {
	parts := strings.Split(s, ".")
	t := hcl.Traversal{hcl.TraverseRoot{Name: parts[0]}}
	for _, p := range parts[1:] {
		t = append(t, hcl.TraverseAttr{Name: p})
	}
	return t
}
