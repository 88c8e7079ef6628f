package main

import (
	"fmt"
	"math"
	"os"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func (a *app) infoCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "info PATH",
		Short: "Show a checkpoint's tensors, metadata and parameter count (headers only)",
		Long: `info detects the format by content (not by extension) and reads only headers,
so it is instant on any file size. PATH may be a file, a shard index, any
shard of a set, or a Hugging Face directory.`,
		Example: `  sluice info model.gguf
  sluice info model.apsim.index.json --json
  sluice info ./Llama-3-8B`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			h := host.New(host.Options{Builtins: builtins, InProcess: a.inProcess, PluginPath: host.SearchPath(os.Getenv(host.PluginPathEnv))})
			defer h.Close()
			typ, err := detectSource(ctx, h, args[0])
			if err != nil {
				return err
			}
			m, err := describe(cmd, h, typ, args[0])
			if err != nil {
				return err
			}
			if a.json {
				return writeJSON(a.stdout, manifestJSON(args[0], typ, m))
			}
			printManifest(a, args[0], typ, m, all)
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "show long metadata values in full")
	return cmd
}

// describe opens a source of the given type on path and describes it.
func describe(cmd *cobra.Command, h *host.Host, typ, path string) (*tensor.Manifest, error) {
	name, _, _ := h.Provider(pipeline.Source, typ)
	inst, err := h.Instance(cmd.Context(), name)
	if err != nil {
		return nil, err
	}
	cfg, err := plugin.ConfigFrom(map[string]any{"path": path})
	if err != nil {
		return nil, err
	}
	src, err := inst.OpenSource(cmd.Context(), typ, cfg)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return src.Describe(cmd.Context())
}

func printManifest(a *app, path, typ string, m *tensor.Manifest, all bool) {
	w := a.stdout
	fmt.Fprintf(w, "%s: %s, %d tensors, %s, %s parameters\n", path, typ, len(m.Tensors), bytesize.Human(m.TotalSize()), humanCount(m.Params()))
	if m.Metadata.Len() > 0 {
		fmt.Fprintln(w, "\nmetadata:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		m.Metadata.All(func(k string, v tensor.Value) bool {
			s := v.String()
			if !all && len(s) > 100 {
				s = s[:97] + "…"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", k, v.Type(), s)
			return true
		})
		tw.Flush()
	}
	fmt.Fprintln(w, "\ntensors:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range m.Tensors {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", t.Name, t.DType, shapeText(t.Shape), bytesize.Human(t.Size))
	}
	tw.Flush()
}

// manifestJSON is the stable --json form of a manifest.
func manifestJSON(path, typ string, m *tensor.Manifest) map[string]any {
	meta := []map[string]any{}
	m.Metadata.All(func(k string, v tensor.Value) bool {
		meta = append(meta, map[string]any{"key": k, "type": v.Type().String(), "value": valueJSON(v)})
		return true
	})
	tensors := []map[string]any{}
	for _, t := range m.Tensors {
		e := map[string]any{"name": t.Name, "dtype": string(t.DType), "shape": t.Shape, "bytes": t.Size}
		if len(t.Attrs) > 0 {
			keys := make([]string, 0, len(t.Attrs))
			for k := range t.Attrs {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			attrs := map[string]string{}
			for _, k := range keys {
				attrs[k] = t.Attrs[k]
			}
			e["attrs"] = attrs
		}
		tensors = append(tensors, e)
	}
	return map[string]any{"path": path, "format": typ, "parameters": m.Params(), "bytes": m.TotalSize(), "metadata": meta, "tensors": tensors}
}

func valueJSON(v tensor.Value) any {
	switch v.Type() {
	case tensor.TypeString:
		s, _ := v.Str()
		return s
	case tensor.TypeBool:
		b, _ := v.Bool()
		return b
	case tensor.TypeF32, tensor.TypeF64:
		f, _ := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprint(f)
		}
		return f
	case tensor.TypeArray:
		if ss, ok := v.StringSlice(); ok {
			return ss
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = valueJSON(v.Index(i))
		}
		return out
	}
	if i, ok := v.Int(); ok {
		return i
	}
	u, _ := v.Uint()
	return u
}
