package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/run"
)

type convertFlags struct {
	dtype         string
	shard         string
	key           string
	arch          string
	layout        string
	format        string
	printPipeline bool
}

func (a *app) convertCommand() *cobra.Command {
	var cf convertFlags
	cmd := &cobra.Command{
		Use:   "convert IN OUT",
		Short: "Convert one checkpoint to another format (a one-stage pipeline built from flags)",
		Long: `convert detects the input format by content and picks the output format by the
output's file name (or --format). It builds the same plan a pipeline would;
--print-pipeline prints that pipeline, so a one-off conversion can become a
scheduled job.`,
		Example: `  sluice convert model.safetensors model.gguf --dtype q4_0
  sluice convert model.gguf model.apsim --shard 2GB --key "team secret"
  sluice convert model.apsim model.safetensors
  sluice convert ./Llama-3-8B out/llama.gguf --arch auto --dtype q8_0 --print-pipeline`,
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
			if cf.key != "" {
				env = append(env, pipeline.EnvPrefix+"signing_key="+cf.key)
			}
			return a.runSource(cmd, "convert.hcl", src, env)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cf.dtype, "dtype", "", "output dtype: f32, f16, bf16, q8_0, q4_0, … (what the output format supports)")
	f.StringVar(&cf.shard, "shard", "", "split the output into shards of at most this size, e.g. 2GB or 512MiB")
	f.StringVar(&cf.key, "key", "", "sign the output with this shared secret (HMAC-SHA256)")
	f.StringVar(&cf.arch, "arch", "", "GGUF architecture: a name, or auto to convert a Hugging Face checkpoint as llama.cpp does")
	f.StringVar(&cf.layout, "layout", "", "APR layout: aprender (default) or spec")
	f.StringVar(&cf.format, "format", "", "output format (sink type), when the file name does not tell")
	f.BoolVar(&cf.printPipeline, "print-pipeline", false, "print the equivalent pipeline as HCL instead of running it")
	return cmd
}

// convertPipeline writes the pipeline a convert command stands for.
func (a *app) convertPipeline(cmd *cobra.Command, h *host.Host, in, out string, cf convertFlags) ([]byte, error) {
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
		return nil, configErr(fmt.Errorf("no plugin writes %q", sinkType))
	}
	sinkSchema, _ := sinkInfo.Sink(sinkType)

	f := hclwrite.NewEmptyFile()
	body := f.Body()
	body.AppendUnstructuredTokens(hclwrite.TokensForIdentifier(fmt.Sprintf("# sluice convert %s %s", in, out)))
	body.AppendNewline()
	if cf.key != "" {
		v := body.AppendNewBlock("variable", []string{"signing_key"}).Body()
		v.SetAttributeRaw("type", hclwrite.TokensForIdentifier("string"))
		v.SetAttributeValue("sensitive", cty.True)
		body.AppendNewline()
	}
	sb := body.AppendNewBlock("source", []string{srcType, "in"}).Body()
	sb.SetAttributeValue("path", cty.StringVal(absPath(in)))
	body.AppendNewline()
	input := "source.in"
	sinkAttrs := map[string]cty.Value{"path": cty.StringVal(absPath(out))}
	if cf.dtype != "" {
		if _, ok := sinkSchema.Schema.Attribute("dtype"); ok {
			sinkAttrs["dtype"] = cty.StringVal(cf.dtype)
		} else {
			tb := body.AppendNewBlock("transform", []string{"quantize", "dtype"}).Body()
			tb.SetAttributeTraversal("input", traversal(input))
			tb.SetAttributeValue("type", cty.StringVal(cf.dtype))
			body.AppendNewline()
			input = "transform.dtype"
		}
	}
	if cf.shard != "" {
		tb := body.AppendNewBlock("transform", []string{"shard", "shards"}).Body()
		tb.SetAttributeTraversal("input", traversal(input))
		tb.SetAttributeValue("max_size", cty.StringVal(cf.shard))
		body.AppendNewline()
		input = "transform.shards"
	}
	if cf.key != "" {
		tb := body.AppendNewBlock("transform", []string{"sign", "key"}).Body()
		tb.SetAttributeTraversal("input", traversal(input))
		tb.SetAttributeTraversal("key", traversal("var.signing_key"))
		body.AppendNewline()
		input = "transform.key"
	}
	for flag, attr := range map[string]string{cf.arch: "architecture", cf.layout: "layout"} {
		if flag == "" {
			continue
		}
		if _, ok := sinkSchema.Schema.Attribute(attr); !ok {
			return nil, configErr(fmt.Errorf("the %s sink has no %s option", sinkType, attr))
		}
		sinkAttrs[attr] = cty.StringVal(flag)
	}
	kb := body.AppendNewBlock("sink", []string{sinkType, "out"}).Body()
	kb.SetAttributeTraversal("input", traversal(input))
	for _, k := range []string{"path", "dtype", "architecture", "layout"} {
		if v, ok := sinkAttrs[k]; ok {
			kb.SetAttributeValue(k, v)
		}
	}
	return hclwrite.Format(f.Bytes()), nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// runSource runs a pipeline held in memory.
func (a *app) runSource(cmd *cobra.Command, name string, src []byte, env []string) error {
	h, arena, heap, err := a.newHost()
	if err != nil {
		return err
	}
	pr := &prepared{h: h, arena: arena, heap: heap}
	defer pr.close()
	cwd, _ := os.Getwd()
	p, diags := pipeline.LoadSource(name, src, cwd, pipeline.Options{Environ: env})
	if !diags.HasErrors() {
		diags = append(diags, p.Decode(h)...)
	}
	if diags.HasErrors() {
		a.printDiags(p, diags)
		return reported(exitBadConfig, diags)
	}
	pr.p = p
	if pr.sess, err = run.Open(cmd.Context(), p, h); err != nil {
		return a.reportStageError(p, err)
	}
	if pr.pl, err = pr.sess.Plan(cmd.Context()); err != nil {
		return a.reportStageError(p, err)
	}
	return a.execute(cmd.Context(), pr)
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
