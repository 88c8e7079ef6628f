package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/sluice-ml/sluice/core/pipeline"
)

// Unchanged decides whether a run of p can be skipped: every enabled sink's
// run manifest must record this pipeline, these variables (the sensitive
// ones through their fingerprint), this sluice binary and these plugin
// binaries, the same input files with the same contents, and outputs that
// still have the size and modification time the manifest recorded.
//
// It reads no input whose size and modification time are the recorded ones;
// an input with a new time but the same size is read, and when its digest
// is still the recorded one the manifest's time is brought up to date (so
// `touch` costs one read, once). Outputs are trusted on size and time: a
// manifest is a record, not a seal — `sluice verify` checks signatures.
//
// With part set, the manifests of a finalized run are tried first, then
// those partition part wrote. The result is "" when the run can be skipped,
// else the first difference found, for people.
func Unchanged(p *pipeline.Pipeline, pv *Provenance, part *Partition) (string, error) {
	if err := pv.waitBinaries(); err != nil {
		return "", err
	}
	var paths []string
	for _, st := range p.Stages {
		if !st.Enabled || st.Kind != pipeline.Sink {
			continue
		}
		path, ok := ManifestPathFromConfig(st)
		if !ok {
			return fmt.Sprintf("%s has no path attribute, so its run manifest cannot be found before planning", st.Addr()), nil
		}
		paths = append(paths, path)
	}
	if len(paths) == 0 {
		return "the pipeline has no enabled sink", nil
	}
	reason, err := pv.unchanged(paths, nil)
	if err != nil || reason == "" || part == nil {
		return reason, err
	}
	var partPaths []string
	for _, path := range paths {
		partPaths = append(partPaths, PartitionManifestPath(path, *part))
	}
	partReason, err := pv.unchanged(partPaths, part)
	if err != nil || partReason == "" {
		return partReason, err
	}
	return reason, nil
}

// unchanged checks the manifests at paths, written by a whole (or
// finalized) run when part is nil, else by partition part.
func (pv *Provenance) unchanged(paths []string, part *Partition) (string, error) {
	for _, path := range paths {
		m, err := ReadManifest(path)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Sprintf("there is no run manifest %s", path), nil
		}
		if err != nil {
			return "", err
		}
		refreshed := false
		reason, err := pv.compare(m, path, part, &refreshed)
		if err != nil || reason != "" {
			return reason, err
		}
		if refreshed {
			if err := WriteManifest(path, m); err != nil {
				return "", err
			}
		}
	}
	return "", nil
}

// compare checks one manifest. When an input was read again because its
// time changed but its digest is the recorded one, the manifest's record of
// it is updated and *refreshed set.
func (pv *Provenance) compare(m *Manifest, path string, part *Partition, refreshed *bool) (string, error) {
	switch {
	case part == nil && m.Partition != nil:
		return fmt.Sprintf("%s was written by partition %d/%d of a run that was not finalized", path, m.Partition.Index, m.Partition.Count), nil
	case part != nil && (m.Partition == nil || m.Partition.Index != part.Index || m.Partition.Count != part.Count):
		return fmt.Sprintf("%s was not written by partition %s", path, part), nil
	case m.Pipeline.Digest != pv.Pipeline.Digest:
		return fmt.Sprintf("the pipeline changed since %s was written", path), nil
	case m.SluiceSHA256 != pv.SluiceSHA256:
		return fmt.Sprintf("the sluice binary changed (the last run was sluice %s, this is sluice %s)", m.Sluice, pv.Sluice), nil
	}
	if r := compareVariables(m.Pipeline.Variables, pv.Pipeline.Variables); r != "" {
		return r, nil
	}
	if !pv.sensitiveMatches(m.Pipeline.Sensitive) {
		return "a sensitive variable has another value", nil
	}
	if r := comparePlugins(m.Plugins, pv.Plugins); r != "" {
		return r, nil
	}
	recorded := map[string]bool{}
	for _, in := range m.Inputs {
		recorded[in.Path] = true
	}
	for _, f := range pv.candidates {
		if !recorded[f] {
			return fmt.Sprintf("input %s is new", f), nil
		}
	}
	for i := range m.Inputs {
		in := &m.Inputs[i]
		fi, err := os.Stat(in.Path)
		if err != nil {
			return fmt.Sprintf("input %s cannot be read: %v", in.Path, err), nil
		}
		switch {
		case uint64(fi.Size()) != in.Size:
			return fmt.Sprintf("input %s changed (%d bytes, was %d)", in.Path, fi.Size(), in.Size), nil
		case sameTime(in.ModTime, fi.ModTime()):
			continue
		case in.SHA256 == "":
			return fmt.Sprintf("input %s was modified", in.Path), nil
		}
		now, err := hashFile(in.Path)
		if err != nil {
			return "", err
		}
		if now.SHA256 != in.SHA256 {
			return fmt.Sprintf("input %s changed (its SHA-256 differs)", in.Path), nil
		}
		if now.ModTime != "" {
			in.ModTime = now.ModTime
			*refreshed = true
		}
	}
	for _, out := range m.Outputs {
		p := resolveOutput(path, out.Path)
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Sprintf("output %s is missing", p), nil
		}
		if uint64(fi.Size()) != out.Size || !sameTime(out.ModTime, fi.ModTime()) {
			return fmt.Sprintf("output %s was modified after the run", p), nil
		}
	}
	return "", nil
}

func compareVariables(was, now map[string]json.RawMessage) string {
	names := map[string]bool{}
	for k := range was {
		names[k] = true
	}
	for k := range now {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		a, okA := was[k]
		b, okB := now[k]
		if !okA || !okB || !jsonEqual(a, b) {
			return fmt.Sprintf("variable %s has another value", k)
		}
	}
	return ""
}

func jsonEqual(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

func comparePlugins(was, now []PluginRecord) string {
	byName := map[string]PluginRecord{}
	for _, p := range was {
		byName[p.Name] = p
	}
	for _, p := range now {
		w, ok := byName[p.Name]
		switch {
		case !ok:
			return fmt.Sprintf("plugin %s was not used by the last run", p.Name)
		case w.Version != p.Version:
			return fmt.Sprintf("plugin %s is version %s, the last run used %s", p.Name, p.Version, w.Version)
		case w.SHA256 != p.SHA256:
			return fmt.Sprintf("the binary of plugin %s changed", p.Name)
		case w.Protocol != p.Protocol:
			return fmt.Sprintf("plugin %s speaks protocol %s, the last run's spoke %s", p.Name, p.Protocol, w.Protocol)
		}
		delete(byName, p.Name)
	}
	for name := range byName {
		return fmt.Sprintf("plugin %s is no longer used", name)
	}
	return ""
}
