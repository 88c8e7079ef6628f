package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluice-ml/sluice/plugins/apsim"
	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// infoSchema names the version of info's --json output. Fields are only ever
// added within a version; docs/cli.md describes every field.
const infoSchema = "sluice.info/v1"

// Limits of what info shows of one metadata value unless --all is given.
const (
	maxTextValue  = 100  // characters of a value in the text output
	maxJSONString = 4096 // bytes of a string in --json
	maxJSONArray  = 64   // elements of an array in --json
)

func (a *app) infoCommand() *cobra.Command {
	var all, tree, isolate bool
	cmd := &cobra.Command{
		Use:   "info PATH",
		Short: "Show a checkpoint's tensors, metadata and parameter count (headers only)",
		Long: `info detects the format by content (not by extension) and reads only headers,
so it is instant on any file size. PATH may be a file, a shard index, any
shard of a set, a Hugging Face directory, or the name a sharded output was
given (model.apsim for model.apsim.index.json, model.gguf for
model-00001-of-00003.gguf).

It shows every tensor (name, dtype, shape, bytes), the metadata, the
parameter count and the files that hold the data. --tree shows the parameter
tree that the dotted tensor names spell, with repeated layers folded.
--json prints the documented, stable schema "sluice.info/v1".

Built-in format plugins run inside the sluice process for info; --isolate
runs them as plugin processes, as run does.`,
		Example: `  sluice info model.gguf
  sluice info model.apsim.index.json --json
  sluice info ./Llama-3-8B --tree
  sluice info model-00002-of-00004.safetensors`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			relaxGC()
			h := a.inspectHost(isolate)
			defer h.Close()
			c, err := openCheckpoint(cmd.Context(), h, args[0])
			if err != nil {
				return err
			}
			defer c.Close()
			rep := newInfoReport(c, all, tree, a.json)
			if a.json {
				return writeInfoJSON(a.stdout, rep)
			}
			printInfo(a.stdout, c, rep, all, tree)
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "show long metadata values in full")
	cmd.Flags().BoolVar(&tree, "tree", false, "show the parameter tree instead of the flat tensor list")
	cmd.Flags().BoolVar(&isolate, "isolate", false, "run the format plugin as its own process instead of inside sluice")
	return cmd
}

// infoReport is the --json form of info, schema sluice.info/v1.
type infoReport struct {
	Schema      string         `json:"schema"`
	Path        string         `json:"path"`
	Read        string         `json:"read"`
	Format      string         `json:"format"`
	Files       []infoFile     `json:"files"`
	TensorCount int            `json:"tensor_count"`
	Parameters  uint64         `json:"parameters"`
	Bytes       uint64         `json:"bytes"`
	DTypes      []infoDType    `json:"dtypes"`
	Metadata    []infoMetadata `json:"metadata"`
	Tensors     []infoTensor   `json:"tensors"`
	Tree        *infoNode      `json:"tree,omitempty"`
}

// writeInfoJSON writes r exactly as writeJSON does, but its tensors one at a
// time through one encoder into a buffered writer. Written whole, a report
// of 20,000 tensors was one value of 4.8 MB, marshalled into a buffer grown
// by doubling and indented into a second one: 0.2 s, most of it the first
// touches of that fresh memory.
func writeInfoJSON(w io.Writer, r *infoReport) error {
	head := *r
	head.Tensors, head.Tree = []infoTensor{}, nil
	var b bytes.Buffer
	if err := writeJSON(&b, &head); err != nil {
		return err
	}
	if len(r.Tensors) == 0 && r.Tree == nil {
		_, err := w.Write(b.Bytes())
		return err
	}
	// head ends with the empty list, "tensors": [], and the closing brace.
	const tail = "[]\n}\n"
	out, ok := bytes.CutSuffix(b.Bytes(), []byte(tail))
	if !ok {
		return fmt.Errorf("internal: the report does not end with its tensor list")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(out)
	var elem bytes.Buffer
	enc := json.NewEncoder(&elem)
	enc.SetEscapeHTML(false)
	enc.SetIndent("    ", "  ")
	bw.WriteString("[")
	for i := range r.Tensors {
		elem.Reset()
		if err := enc.Encode(&r.Tensors[i]); err != nil {
			return err
		}
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n    ")
		bw.Write(bytes.TrimSuffix(elem.Bytes(), []byte("\n")))
	}
	if len(r.Tensors) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]")
	if r.Tree != nil {
		bw.WriteString(",\n  \"tree\": ")
		if err := writeTreeJSON(bw, enc, &elem, r.Tree, "  "); err != nil {
			return err
		}
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// writeTreeJSON writes node as writeJSON would at the depth whose lines
// begin with prefix: the node without its children through enc (which
// writes into elem), then each child the same way, one level deeper.
func writeTreeJSON(bw *bufio.Writer, enc *json.Encoder, elem *bytes.Buffer, node *infoNode, prefix string) error {
	own := *node
	own.Children = nil
	elem.Reset()
	enc.SetIndent(prefix, "  ")
	if err := enc.Encode(&own); err != nil {
		return err
	}
	b := bytes.TrimSuffix(elem.Bytes(), []byte("\n"))
	if len(node.Children) == 0 {
		bw.Write(b)
		return nil
	}
	// children is the last field: it goes before the closing brace.
	closing := "\n" + prefix + "}"
	b, ok := bytes.CutSuffix(b, []byte(closing))
	if !ok {
		return fmt.Errorf("internal: a tree node does not end with its closing brace")
	}
	bw.Write(b)
	bw.WriteString(",\n" + prefix + "  \"children\": [")
	inner := prefix + "    "
	for i, c := range node.Children {
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n" + inner)
		if err := writeTreeJSON(bw, enc, elem, c, inner); err != nil {
			return err
		}
	}
	bw.WriteString("\n" + prefix + "  ]" + closing)
	return nil
}

// infoFile is one file that holds tensor data.
type infoFile struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// infoDType sums the tensors of one dtype.
type infoDType struct {
	DType      string `json:"dtype"`
	Tensors    int    `json:"tensors"`
	Parameters uint64 `json:"parameters"`
	Bytes      uint64 `json:"bytes"`
}

// infoMetadata is one metadata entry.
type infoMetadata struct {
	Key       string `json:"key"`
	Type      string `json:"type"`
	ElemType  string `json:"elem_type,omitempty"`
	Length    *int   `json:"length,omitempty"`
	Value     any    `json:"value"`
	Truncated bool   `json:"truncated,omitempty"`
}

// infoTensor is one tensor.
type infoTensor struct {
	Name       string            `json:"name"`
	DType      string            `json:"dtype"`
	Shape      []uint64          `json:"shape"`
	Parameters uint64            `json:"parameters"`
	Bytes      uint64            `json:"bytes"`
	Attrs      map[string]string `json:"attrs,omitempty"`
	File       *int              `json:"file,omitempty"`
	Offset     *uint64           `json:"offset,omitempty"`
}

// infoNode is one node of the parameter tree.
type infoNode struct {
	Key        string      `json:"key"`
	Tensor     string      `json:"tensor,omitempty"`
	Parameters uint64      `json:"parameters"`
	Bytes      uint64      `json:"bytes"`
	Children   []*infoNode `json:"children,omitempty"`
}

// newInfoReport builds the report; its Tensors and Tree only if tensors is
// set (the text output prints them from the manifest).
func newInfoReport(c *checkpoint, all, tree, tensors bool) *infoReport {
	m := c.Manifest
	r := &infoReport{
		Schema: infoSchema, Path: c.Arg, Read: c.Path, Format: c.Format,
		Files: []infoFile{}, TensorCount: len(m.Tensors), Parameters: m.Params(), Bytes: m.TotalSize(),
		DTypes: []infoDType{}, Metadata: []infoMetadata{}, Tensors: []infoTensor{},
	}
	var fileOf []int
	var offsets []uint64 // what the tensors' File and Offset point to
	if tensors {
		r.Tensors = make([]infoTensor, 0, len(m.Tensors))
		fileOf, offsets = make([]int, len(m.Tensors)), make([]uint64, len(m.Tensors))
	}
	fileIndex := map[string]int{}
	lastFile := -1 // the file of the tensor before: a shard's tensors come together
	dtypes := map[tensor.DType]*infoDType{}
	var d *infoDType
	for i := range m.Tensors {
		t := &m.Tensors[i]
		n, _ := t.Elements()
		if loc := t.Location; loc != nil {
			if lastFile < 0 || r.Files[lastFile].Path != loc.Path {
				k, ok := fileIndex[loc.Path]
				if !ok {
					k = len(r.Files)
					fileIndex[loc.Path] = k
					size := int64(-1)
					if fi, err := os.Stat(loc.Path); err == nil {
						size = fi.Size()
					}
					r.Files = append(r.Files, infoFile{Path: loc.Path, Bytes: size})
				}
				lastFile = k
			}
			if tensors {
				fileOf[i], offsets[i] = lastFile, loc.Offset
			}
		}
		if tensors {
			e := infoTensor{Name: t.Name, DType: string(t.DType), Shape: nonNil(t.Shape), Parameters: n, Bytes: t.Size}
			if len(t.Attrs) > 0 {
				e.Attrs = t.Attrs
			}
			if t.Location != nil {
				e.File, e.Offset = &fileOf[i], &offsets[i]
			}
			r.Tensors = append(r.Tensors, e)
		}
		if d == nil || d.DType != string(t.DType) {
			if d = dtypes[t.DType]; d == nil {
				d = &infoDType{DType: string(t.DType)}
				dtypes[t.DType] = d
			}
		}
		d.Tensors++
		d.Parameters += n
		d.Bytes += t.Size
	}
	for _, d := range dtypes {
		r.DTypes = append(r.DTypes, *d)
	}
	sort.Slice(r.DTypes, func(i, j int) bool {
		if r.DTypes[i].Bytes != r.DTypes[j].Bytes {
			return r.DTypes[i].Bytes > r.DTypes[j].Bytes
		}
		return r.DTypes[i].DType < r.DTypes[j].DType
	})
	m.Metadata.All(func(k string, v tensor.Value) bool {
		r.Metadata = append(r.Metadata, metadataJSON(k, v, all))
		return true
	})
	if tree && tensors {
		r.Tree = treeJSON(sizeTree(paramTree(m), m))
	}
	return r
}

func nonNil(s []uint64) []uint64 {
	if s == nil {
		return []uint64{}
	}
	return s
}

// metadataJSON renders one metadata entry; long strings and arrays are cut
// unless all is set.
func metadataJSON(k string, v tensor.Value, all bool) infoMetadata {
	e := infoMetadata{Key: k, Type: v.Type().String()}
	switch v.Type() {
	case tensor.TypeArray:
		e.ElemType = v.Elem().String()
		length := v.Len()
		e.Length = &length
		n := length
		if !all && n > maxJSONArray {
			e.Truncated = true
			n = maxJSONArray
		}
		if v.Elem() == tensor.TypeString {
			ss := make([]string, 0, n)
			for _, s := range v.Strings() {
				if len(ss) == n {
					break
				}
				ss = append(ss, s)
			}
			e.Value = ss
			break
		}
		items := make([]any, n)
		for i := range items {
			items[i] = valueJSON(v.Index(i))
		}
		e.Value = items
	case tensor.TypeString:
		s, _ := v.Str()
		if !all && len(s) > maxJSONString {
			s, e.Truncated = cutUTF8(s, maxJSONString), true
		}
		e.Value = s
	default:
		e.Value = valueJSON(v)
	}
	return e
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// valueJSON is the JSON value of a metadata value: numbers as numbers (f32
// with float32 precision), non-finite floats as strings, arrays as lists.
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
		bits := 64
		if v.Type() == tensor.TypeF32 {
			bits = 32
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, bits))
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

func printInfo(w io.Writer, c *checkpoint, r *infoReport, all, tree bool) {
	m := c.Manifest
	fmt.Fprintf(w, "%s: %s, %d tensors, %s, %s parameters\n", c.Arg, c.Format, len(m.Tensors), bytesize.Human(m.TotalSize()), humanCount(m.Params()))
	if c.Note != "" {
		fmt.Fprintf(w, "(%s)\n", c.Note)
	}
	if len(r.DTypes) > 0 {
		parts := make([]string, len(r.DTypes))
		for i, d := range r.DTypes {
			parts[i] = fmt.Sprintf("%s × %d (%s)", d.DType, d.Tensors, bytesize.Human(d.Bytes))
		}
		fmt.Fprintf(w, "dtypes: %s\n", strings.Join(parts, ", "))
	}
	if len(r.Files) > 1 {
		fmt.Fprintf(w, "\nfiles:\n")
		for _, f := range r.Files {
			fmt.Fprintf(w, "  %s  %s\n", displayPath(f.Path), bytesize.Human(uint64(max(f.Bytes, 0))))
		}
	}
	if m.Metadata.Len() > 0 {
		fmt.Fprintln(w, "\nmetadata:")
		tw := newTable(w)
		m.Metadata.All(func(k string, v tensor.Value) bool {
			s := v.String()
			if !all && len(s) > maxTextValue {
				s = cutUTF8(s, maxTextValue-3) + "…"
			}
			s = strings.NewReplacer("\t", `\t`, "\n", `\n`).Replace(s)
			typ := v.Type().String()
			if v.Type() == tensor.TypeArray {
				typ = fmt.Sprintf("[%s × %d]", v.Elem(), v.Len())
				s = strings.TrimPrefix(s, typ)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", k, typ, s)
			return true
		})
		tw.Flush()
	}
	if tree {
		fmt.Fprintln(w, "\nparameter tree:")
		writeTree(w, sizeTree(paramTree(m), m))
		return
	}
	fmt.Fprintln(w, "\ntensors:")
	writeTensorTable(w, m.Tensors)
}

// writeTensorTable prints a line per tensor: name, dtype, shape and size. It
// goes over the tensors twice, to measure the columns and to print them,
// so that a mixture-of-experts checkpoint's tens of thousands of lines are
// never held in memory; fresh memory is what a short command pays most for.
func writeTensorTable(w io.Writer, ts []tensor.TensorInfo) {
	sizes := map[uint64]string{}     // a checkpoint's tensors come in few sizes…
	shapes := map[[4]uint64]string{} // …and few shapes
	text := func(t *tensor.TensorInfo) (shape, size string) {
		size, ok := sizes[t.Size]
		if !ok {
			size = bytesize.Human(t.Size)
			sizes[t.Size] = size
		}
		if len(t.Shape) == 0 || len(t.Shape) > 4 || slices.Contains(t.Shape, 0) {
			return shapeText(t.Shape), size // the key below is for 1 to 4 nonzero dims
		}
		var key [4]uint64
		copy(key[:], t.Shape)
		if shape, ok = shapes[key]; !ok {
			shape = shapeText(t.Shape)
			shapes[key] = shape
		}
		return shape, size
	}
	cols := newColumns(w, "  ")
	for i := range ts {
		shape, size := text(&ts[i])
		cols.Measure(ts[i].Name, string(ts[i].DType), shape, size)
	}
	for i := range ts {
		shape, size := text(&ts[i])
		cols.Line(ts[i].Name, string(ts[i].DType), shape, size)
	}
	cols.Flush()
}

// paramTree is the tree the tensor names spell, split at dots. It is the
// tree apsim rebuilds its records from, and it fits every format: the names
// alone decide it (GGUF's blk.0.attn_q.weight, Hugging Face's
// model.layers.0.self_attn.q_proj.weight).
func paramTree(m *tensor.Manifest) *apsim.Node {
	names := make([]string, len(m.Tensors))
	for i, t := range m.Tensors {
		names[i] = t.Name
	}
	return apsim.Tree(names)
}

// sizedNode is a node of the parameter tree with its tensor, the
// parameters and bytes under it, and the number of its shape: two subtrees
// have the same number if and only if they have the same keys, dtypes and
// shapes all the way down, so that identical layers can be folded.
type sizedNode struct {
	*apsim.Node
	tensor        *tensor.TensorInfo // nil where no tensor ends
	params, bytes uint64
	shape         int
	children      []*sizedNode
}

// sizeTree sizes every node of root, the tree paramTree spells from m.
func sizeTree(root *apsim.Node, m *tensor.Manifest) *sizedNode {
	index := m.Index()
	shapes := map[string]int{} // a subtree's shape, spelt with its children's numbers → its number
	var key []byte
	var size func(n *apsim.Node) *sizedNode
	size = func(n *apsim.Node) *sizedNode {
		s := &sizedNode{Node: n, children: make([]*sizedNode, len(n.Children))}
		for i, c := range n.Children {
			s.children[i] = size(c)
			s.params += s.children[i].params
			s.bytes += s.children[i].bytes
		}
		key = key[:0]
		if n.Tensor != "" {
			t := &m.Tensors[index[n.Tensor]]
			e, _ := t.Elements()
			s.tensor, s.params, s.bytes = t, s.params+e, s.bytes+t.Size
			key = append(append(key, t.DType...), shapeText(t.Shape)...)
		}
		key = append(key, '{')
		for _, c := range s.children {
			key = append(append(key, c.Key...), ':')
			key = append(strconv.AppendInt(key, int64(c.shape), 10), ',')
		}
		key = append(key, '}')
		if s.shape = shapes[string(key)]; s.shape == 0 {
			s.shape = len(shapes) + 1
			shapes[string(key)] = s.shape
		}
		return s
	}
	return size(root)
}

func treeJSON(root *sizedNode) *infoNode {
	out := &infoNode{Key: root.Key, Tensor: root.Tensor, Parameters: root.params, Bytes: root.bytes}
	for _, c := range root.children {
		out.Children = append(out.Children, treeJSON(c))
	}
	return out
}

// writeTree prints the parameter tree: chains of single children joined
// with dots, runs of list items with the same structure folded into one
// ("0..31 × 32"), tensors with dtype, shape and size.
func writeTree(w io.Writer, root *sizedNode) {
	tw := newTable(w)
	var walk func(n *sizedNode, depth int)
	line := func(label string, x *sizedNode, depth int, suffix string) {
		indent := strings.Repeat("  ", depth+1)
		if t := x.tensor; t != nil && len(x.children) == 0 {
			fmt.Fprintf(tw, "%s%s\t%s %s\t%s\t%s\n", indent, label, t.DType, shapeText(t.Shape), bytesize.Human(t.Size), suffix)
			return
		}
		what := humanCount(x.params) + " params"
		if t := x.tensor; t != nil {
			what = fmt.Sprintf("%s %s + %s", t.DType, shapeText(t.Shape), what)
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", indent, label, what, bytesize.Human(x.bytes), suffix)
	}
	// compress follows chains of single children without a tensor.
	compress := func(c *sizedNode) (string, *sizedNode) {
		label, x := c.Key, c
		for x.tensor == nil && len(x.children) == 1 {
			x = x.children[0]
			label += "." + x.Key
		}
		return label, x
	}
	walk = func(n *sizedNode, depth int) {
		kids, list := n.children, n.IsList()
		for i := 0; i < len(kids); {
			j := i + 1
			if list {
				for j < len(kids) && kids[j].shape == kids[i].shape {
					j++
				}
			}
			label, x := compress(kids[i])
			if j-i > 1 {
				label = kids[i].Key + ".." + kids[j-1].Key + strings.TrimPrefix(label, kids[i].Key)
				line(label, x, depth, fmt.Sprintf("× %d (each)", j-i))
			} else {
				line(label, x, depth, "")
			}
			walk(x, depth+1)
			i = j
		}
	}
	walk(root, 0)
	tw.Flush()
}

// table is a tabwriter for the command's output: Flush writes its lines to
// the destination in a few large writes (tabwriter alone writes every cell
// with its own call, a system call each on a terminal or pipe), with the
// trailing spaces of each line dropped (trimTrailing).
type table struct {
	*tabwriter.Writer
	out *bufio.Writer
}

func newTable(w io.Writer) *table {
	out := bufio.NewWriterSize(trimTrailing(w), 64<<10)
	return &table{Writer: tabwriter.NewWriter(out, 0, 0, 2, ' ', 0), out: out}
}

// Flush writes the table.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	return t.out.Flush()
}

// trimTrailing returns a writer that drops the spaces tabwriter leaves at
// the end of lines whose last cells are empty.
func trimTrailing(w io.Writer) io.Writer { return &trimmer{w: w} }

type trimmer struct {
	w       io.Writer
	pending []byte // spaces not yet known to be followed by text
}

func (t *trimmer) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(t.pending)+len(p))
	for _, c := range p {
		switch c {
		case ' ':
			t.pending = append(t.pending, c)
		case '\n':
			t.pending = t.pending[:0]
			out = append(out, c)
		default:
			out = append(out, t.pending...)
			t.pending = t.pending[:0]
			out = append(out, c)
		}
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
