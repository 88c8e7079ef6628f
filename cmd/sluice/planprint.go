package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/core/run"
	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// sourceTensorKey names a tensor of a source stage.
type sourceTensorKey struct {
	source *pipeline.Stage
	name   string
}

// fileBacked returns the source tensors whose bytes sit in a file, which a
// sink can copy without reading them.
func fileBacked(pl *plan.Plan) map[sourceTensorKey]bool {
	backed := map[sourceTensorKey]bool{}
	for _, t := range pl.Trees {
		if t.Tensor.Location != nil {
			backed[sourceTensorKey{t.Source, t.Tensor.Name}] = true
		}
	}
	return backed
}

// routeText describes how a tensor reaches a sink: "bf16 → q8_0", or
// "unchanged (file reference)".
func routeText(backed map[sourceTensorKey]bool, sk *plan.SinkPlan, i int) string {
	t, r := &sk.Final.Tensors[i], &sk.Routes[i]
	var parts []string
	for _, op := range r.Ops {
		parts = append(parts, op.String())
	}
	if len(parts) == 0 {
		if backed[sourceTensorKey{r.Source, r.SourceTensor}] {
			return fmt.Sprintf("%s, unchanged (copied from the source file)", t.DType)
		}
		return fmt.Sprintf("%s, unchanged", t.DType)
	}
	return strings.Join(parts, ", ")
}

func printPlan(w io.Writer, pl *plan.Plan) {
	for _, sp := range pl.Stages {
		s := sp.Stage
		switch s.Kind {
		case pipeline.Source:
			fmt.Fprintf(w, "%s (%s): %d tensors, %s, %s parameters\n", s.Addr(), s.Type,
				len(sp.Out.Tensors), bytesize.Human(sp.Out.TotalSize()), humanCount(sp.Out.Params()))
		case pipeline.Transform:
			fmt.Fprintf(w, "%s (%s): %d tensors out\n", s.Addr(), s.Type, len(sp.Out.Tensors))
		default:
			continue
		}
		printDecisions(w, sp.Decisions)
	}
	backed := fileBacked(pl)
	for _, sk := range pl.Sinks {
		fmt.Fprintf(w, "%s (%s): %d tensors, %s\n", sk.Stage.Addr(), sk.Stage.Type, len(sk.Final.Tensors), bytesize.Human(sk.Final.TotalSize()))
		for _, f := range sk.Plan.Files {
			size := "size known after writing"
			if f.Size > 0 {
				size = bytesize.Human(f.Size)
			}
			fmt.Fprintf(w, "  writes %s (%s)\n", f.Path, size)
		}
		printDecisions(w, sk.Plan.Notes)
		for _, d := range sk.Plan.Drop {
			fmt.Fprintf(w, "  drops %s: %s\n", d.Tensor, d.Msg)
		}
		reasons := map[string]string{}
		for _, c := range sk.Plan.Convert {
			reasons[c.Tensor] = c.Reason
		}
		tw := newTable(w)
		for i, t := range sk.Final.Tensors {
			line := routeText(backed, sk, i)
			if r := reasons[t.Name]; r != "" {
				line += " (" + r + ")"
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", t.Name, shapeText(t.Shape), line)
		}
		tw.Flush()
	}
}

func printDecisions(w io.Writer, ds []plugin.Decision) {
	for _, d := range ds {
		if d.Tensor == "" {
			fmt.Fprintf(w, "  %s\n", d.Msg)
		} else {
			fmt.Fprintf(w, "  %s: %s\n", d.Tensor, d.Msg)
		}
	}
}

func shapeText(s []uint64) string {
	b := make([]byte, 0, 2+8*len(s))
	b = append(b, '[')
	for i, d := range s {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendUint(b, d, 10)
	}
	return string(append(b, ']'))
}

func humanCount(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f B", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f M", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f K", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// planJSON is the stable --json form of a plan.
func planJSON(pl *plan.Plan) map[string]any {
	var stages []map[string]any
	for _, sp := range pl.Stages {
		s := sp.Stage
		if s.Kind == pipeline.Sink {
			continue
		}
		st := map[string]any{"address": s.Addr(), "type": s.Type, "tensors": len(sp.Out.Tensors), "bytes": sp.Out.TotalSize()}
		if len(sp.Decisions) > 0 {
			st["decisions"] = decisionsJSON(sp.Decisions)
		}
		stages = append(stages, st)
	}
	var sinks []map[string]any
	for _, sk := range pl.Sinks {
		var files []map[string]any
		for _, f := range sk.Plan.Files {
			files = append(files, map[string]any{"path": f.Path, "size": f.Size, "tensors": f.Tensors})
		}
		tensors := make([]tensorJSON, len(sk.Final.Tensors))
		for i, t := range sk.Final.Tensors {
			r := sk.Routes[i]
			var ops []string
			for _, op := range r.Ops {
				ops = append(ops, op.String())
			}
			tensors[i] = tensorJSON{Bytes: t.Size, DType: string(t.DType), Name: t.Name, Ops: ops, Shape: t.Shape,
				Source: r.Source.Addr(), SourceTensor: r.SourceTensor}
		}
		sinks = append(sinks, map[string]any{
			"address": sk.Stage.Addr(), "type": sk.Stage.Type, "files": files, "tensors": tensors,
			"notes": decisionsJSON(sk.Plan.Notes), "dropped": decisionsJSON(sk.Plan.Drop),
		})
	}
	return map[string]any{"pipeline_digest": pl.Pipeline.Digest, "stages": stages, "sinks": sinks}
}

// tensorJSON is one tensor of a sink in the --json form of a plan: a struct,
// not a map, for models of tens of thousands of tensors, with its fields in
// the order of their keys, as a map's are written.
type tensorJSON struct {
	Bytes        uint64   `json:"bytes"`
	DType        string   `json:"dtype"`
	Name         string   `json:"name"`
	Ops          []string `json:"ops"`
	Shape        []uint64 `json:"shape"`
	Source       string   `json:"source"`
	SourceTensor string   `json:"source_tensor"`
}

func decisionsJSON(ds []plugin.Decision) []map[string]string {
	out := []map[string]string{}
	for _, d := range ds {
		out = append(out, map[string]string{"tensor": d.Tensor, "decision": d.Msg})
	}
	return out
}

func resultJSON(res *run.Result) map[string]any {
	var arts []map[string]any
	for _, sa := range res.Artifacts {
		for _, a := range sa.Artifacts {
			arts = append(arts, map[string]any{"sink": sa.Stage.Addr(), "path": a.Path, "size": a.Size, "sha256": a.SHA256})
		}
	}
	return map[string]any{"artifacts": arts, "bytes": res.Bytes}
}
