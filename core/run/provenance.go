package run

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// Provenance is what a run's outputs depend on, known before anything is
// read: the pipeline, its variables, the plugins and the sluice that serve
// it, and the input files its sources name.
type Provenance struct {
	// Sluice is the sluice version.
	Sluice string
	// SluiceSHA256 is the digest of the sluice binary, which runs the
	// transforms and serves the built-in plugins.
	SluiceSHA256 string
	Pipeline     PipelineRecord
	// Plugins are sorted by name.
	Plugins []PluginRecord
	// sensitive is the canonical encoding of the sensitive variables'
	// values. It is never written.
	sensitive []byte
	// candidates are the input files found from the sources' `path`
	// attributes (absolute, sorted).
	candidates []string
	// binaries is closed once SluiceSHA256 and the plugins' SHA256 are
	// filled in (or binariesErr set): the binaries are hashed in the
	// background, while the plugins start. Read them after waitBinaries.
	binaries    chan struct{}
	binariesErr error
	// binaryRecs are the binaries' records, for the digest cache.
	binaryRecs []FileRecord
}

// BinaryRecords returns the size, time and SHA-256 of the sluice and plugin
// binaries the run is recorded with, once they are known.
func (pv *Provenance) BinaryRecords() ([]FileRecord, error) {
	if err := pv.waitBinaries(); err != nil {
		return nil, err
	}
	return pv.binaryRecs, nil
}

// waitBinaries waits for the digests of the sluice and plugin binaries.
func (pv *Provenance) waitBinaries() error {
	if pv.binaries == nil { // not made by NewProvenance
		return nil
	}
	<-pv.binaries
	return pv.binariesErr
}

// NewProvenance records the pipeline, its variables and the plugins its
// enabled stages use. Built-in plugins and transforms are served by the
// sluice binary, whose digest stands for them. The binaries are hashed in
// the background (tens of milliseconds for sluice's own), unless known
// holds the digest of a binary that has kept its size and time (the user's
// digest cache): what needs their digests waits for them.
func NewProvenance(p *pipeline.Pipeline, h *host.Host, version string, known DigestCache) (*Provenance, error) {
	pv := &Provenance{Sluice: version, Pipeline: PipelineRecord{Digest: p.Digest, Variables: map[string]json.RawMessage{}}}
	var sens bytes.Buffer
	vars := append([]*pipeline.Variable(nil), p.Variables...)
	sort.Slice(vars, func(i, j int) bool { return vars[i].Name < vars[j].Name })
	for _, v := range vars {
		val, _ := v.Value.UnmarkDeep()
		b, err := valueJSON(val)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", v.Name, err)
		}
		if v.Sensitive {
			pv.Pipeline.Variables[v.Name] = json.RawMessage(Redacted)
			fmt.Fprintf(&sens, "%s\x00%s\x00", v.Name, b)
			continue
		}
		pv.Pipeline.Variables[v.Name] = b
	}
	pv.sensitive = sens.Bytes()
	if len(pv.sensitive) > 0 {
		var salt [16]byte
		if _, err := rand.Read(salt[:]); err != nil {
			return nil, err
		}
		pv.Pipeline.Sensitive = fingerprint(salt[:], pv.sensitive)
	}

	// The plugins and their binaries, by plugin name; the digests come
	// later.
	var plugins []PluginRecord
	bins := map[string]string{}
	for _, st := range p.Stages {
		if !st.Enabled || st.Kind == pipeline.Transform {
			continue
		}
		name, info, ok := h.Provider(st.Kind, st.Type)
		if !ok {
			return nil, fmt.Errorf("%s: no plugin provides a %s of type %q", st.Addr(), st.Kind, st.Type)
		}
		if _, done := bins[name]; done {
			continue
		}
		bin, builtin, err := h.Binary(name)
		if err != nil {
			return nil, err
		}
		plugins = append(plugins, PluginRecord{Name: name, Version: info.Version, Protocol: fmt.Sprintf("%d.%d", plugin.ProtocolVersion, info.ProtocolMinor), Builtin: builtin})
		bins[name] = bin
	}
	sort.Slice(plugins, func(i, j int) bool { return plugins[i].Name < plugins[j].Name })
	// Transforms run inside sluice: the binary's digest covers them.
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the sluice binary: %w", err)
	}
	pv.binaries = make(chan struct{})
	go func() {
		defer close(pv.binaries)
		digests := map[string]string{}
		hash := func(bin string) (string, error) {
			if sum, ok := digests[bin]; ok {
				return sum, nil
			}
			rec, err := digestOrStat(context.Background(), bin, known, true, nil)
			if err != nil {
				return "", err
			}
			digests[bin] = rec.SHA256
			pv.binaryRecs = append(pv.binaryRecs, rec)
			return rec.SHA256, nil
		}
		for i := range plugins {
			sum, err := hash(bins[plugins[i].Name])
			if err != nil {
				pv.binariesErr = fmt.Errorf("plugin %s: %w", plugins[i].Name, err)
				return
			}
			plugins[i].SHA256 = sum
		}
		sum, err := hash(exe)
		if err != nil {
			pv.binariesErr = fmt.Errorf("hashing the sluice binary: %w", err)
			return
		}
		pv.SluiceSHA256, pv.Plugins = sum, plugins
	}()

	files, err := sourceFiles(p)
	if err != nil {
		return nil, err
	}
	pv.candidates = files
	return pv, nil
}

func valueJSON(v cty.Value) (json.RawMessage, error) {
	if v == cty.NilVal || v.IsNull() {
		return json.RawMessage("null"), nil
	}
	b, err := ctyjson.SimpleJSONValue{Value: v}.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return b, nil
}

func fingerprint(salt, msg []byte) string {
	m := hmac.New(sha256.New, salt)
	m.Write(msg)
	return "hmac-sha256:" + hex.EncodeToString(salt) + ":" + hex.EncodeToString(m.Sum(nil))
}

// sensitiveMatches reports whether a recorded fingerprint is that of the
// current sensitive values.
func (pv *Provenance) sensitiveMatches(recorded string) bool {
	if recorded == "" || len(pv.sensitive) == 0 {
		return recorded == "" && len(pv.sensitive) == 0
	}
	parts := strings.Split(recorded, ":")
	if len(parts) != 3 || parts[0] != "hmac-sha256" {
		return false
	}
	salt, err := hex.DecodeString(parts[1])
	if err != nil {
		return false
	}
	return hmac.Equal([]byte(fingerprint(salt, pv.sensitive)), []byte(recorded))
}

// sourceFiles lists the files the enabled sources name in their `path`
// attribute: the file itself, or every regular file directly inside a
// directory (a Hugging Face checkpoint's weights, index, config and
// tokenizer), leaving out hidden files, run manifests and temporary files.
// Sources without a `path` attribute contribute only the files their
// manifests reference (see InputFiles).
func sourceFiles(p *pipeline.Pipeline) ([]string, error) {
	set := map[string]bool{}
	for _, st := range p.Stages {
		if !st.Enabled || st.Kind != pipeline.Source {
			continue
		}
		path, ok := stringAttr(st, "path")
		if !ok {
			continue
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(abs)
		if err != nil {
			// The source reports it better when it opens.
			set[abs] = true
			continue
		}
		if !fi.IsDir() {
			set[abs] = true
			continue
		}
		entries, err := os.ReadDir(abs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", st.Addr(), err)
		}
		for _, e := range entries {
			n := e.Name()
			if !e.Type().IsRegular() || strings.HasPrefix(n, ".") || strings.HasSuffix(n, ManifestSuffix) || atomicfile.IsTemp(n) {
				continue
			}
			set[filepath.Join(abs, n)] = true
		}
	}
	return sortedSet(set), nil
}

func stringAttr(st *pipeline.Stage, name string) (string, bool) {
	cfg := st.Config
	if cfg == cty.NilVal || cfg.IsNull() || !cfg.Type().IsObjectType() || !cfg.Type().HasAttribute(name) {
		return "", false
	}
	v, _ := cfg.GetAttr(name).Unmark()
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String || v.AsString() == "" {
		return "", false
	}
	return v.AsString(), true
}

func sortedSet(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// InputFiles returns every input file of a planned run: the files the
// sources name and every file a source tensor's bytes lie in, without the
// run's own outputs. Paths are absolute and sorted.
func (pv *Provenance) InputFiles(pl *plan.Plan) []string {
	set := map[string]bool{}
	for _, f := range pv.candidates {
		set[f] = true
	}
	abs := absPaths{}
	for _, sp := range pl.Stages {
		if sp.Stage.Kind != pipeline.Source || sp.Out == nil {
			continue
		}
		for _, t := range sp.Out.Tensors {
			if t.Location != nil {
				if p, ok := abs.of(t.Location.Path); ok {
					set[p] = true
				}
			}
		}
	}
	for _, sk := range pl.Sinks {
		for _, f := range sk.Plan.Files {
			if abs, err := filepath.Abs(f.Path); err == nil {
				delete(set, abs)
			}
		}
	}
	return sortedSet(set)
}

// locationFiles returns the files that the source tensors of the given
// trees lie in (absolute).
func locationFiles(trees []*plan.Tree) map[string]bool {
	set := map[string]bool{}
	abs := absPaths{}
	for _, t := range trees {
		if t.Tensor.Location != nil {
			if p, ok := abs.of(t.Tensor.Location.Path); ok {
				set[p] = true
			}
		}
	}
	return set
}

// Manifest starts a manifest for a sink from the provenance.
func (pv *Provenance) manifest(stage string) *Manifest {
	return &Manifest{
		Format: ManifestFormat, Version: ManifestVersion, Sluice: pv.Sluice, SluiceSHA256: pv.SluiceSHA256, Stage: stage,
		Pipeline: pv.Pipeline, Plugins: append([]PluginRecord(nil), pv.Plugins...),
	}
}
